/*
 * MPI_Allreduce.
 *
 * recursive_doubling: log2(p) exchanges of the whole message, for small
 *   messages (latency-bound).  Scratch = one message (only chosen below
 *   small_size, so within the bound).  Combines in rank order, so it also
 *   serves non-commutative operations.
 *
 * rsag: pipelined pairwise reduce-scatter then allgather, for everything
 *   else.  Rank r owns block r of the result.  Every rank posts, up front,
 *   the sends of its contribution to every other block (read from sbuf, so
 *   no scratch), and streams the contributions to its own block through
 *   pipeline_depth scratch slots, reducing segment j of one source while
 *   later segments are still arriving.  As soon as segment j of its block is
 *   complete it is sent to every other rank, so the allgather overlaps the
 *   reduce-scatter.  Scratch = depth segments, whatever the message size;
 *   each rank moves 2 (p-1)/p of the message, the minimum.  The result is
 *   bitwise identical on every rank because each block is reduced once, by
 *   its owner, in a fixed order.
 *
 * Order of blocking waits: a rank blocks only on receives of the
 *   reduce-scatter, whose sends were all posted before anyone waits, and at
 *   the end on the allgather, whose sends depend only on those receives.
 */
#include "coll_bufpool_pipeline.h"

#include "ompi/mca/coll/base/coll_tags.h"

#define COMPONENT (&mca_coll_bufpool_component)

/* ---------------------------------------------------------------------- */

static int allreduce_recursive_doubling(const void *sbuf, void *rbuf, size_t count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int tag = MCA_COLL_BASE_TAG_ALLREDUCE;
    ptrdiff_t gap;
    size_t span = bufpool_span(dtype, count, &gap);
    int rc;

    if (MPI_IN_PLACE != sbuf) {
        rc = bufpool_copy(rbuf, sbuf, count, dtype);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    char *mem = mca_coll_bufpool_scratch_get(span);
    if (NULL == mem) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    char *tmp = mem - gap;

    int pof2 = 1;
    while (pof2 * 2 <= size) {
        pof2 *= 2;
    }
    const int extra = size - pof2;
    int newrank;

    /* Fold the ranks beyond the largest power of two into their left
     * neighbours: rank 2i sends to 2i+1, which combines "2i op 2i+1". */
    if (rank < 2 * extra) {
        if (0 == rank % 2) {
            rc = MCA_PML_CALL(
                send(rbuf, count, dtype, rank + 1, tag, MCA_PML_BASE_SEND_STANDARD, comm));
            newrank = -1;
        } else {
            rc = MCA_PML_CALL(recv(tmp, count, dtype, rank - 1, tag, comm, MPI_STATUS_IGNORE));
            if (OMPI_SUCCESS == rc) {
                bufpool_reduce(op, tmp, rbuf, count, dtype);
            }
            newrank = rank / 2;
        }
    } else {
        newrank = rank - extra;
    }

    for (int mask = 1; OMPI_SUCCESS == rc && newrank >= 0 && mask < pof2; mask <<= 1) {
        int newpeer = newrank ^ mask;
        int peer = newpeer < extra ? newpeer * 2 + 1 : newpeer + extra;
        rc = bufpool_sendrecv(rbuf, count, dtype, peer, tmp, count, dtype, peer, tag, comm);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        if (peer < rank) {
            bufpool_reduce(op, tmp, rbuf, count, dtype); /* rbuf = peer op mine */
        } else {
            bufpool_reduce(op, rbuf, tmp, count, dtype); /* tmp = mine op peer */
            rc = bufpool_copy(rbuf, tmp, count, dtype);
        }
    }

    /* Give the folded ranks their result. */
    if (OMPI_SUCCESS == rc && rank < 2 * extra) {
        if (0 == rank % 2) {
            rc = MCA_PML_CALL(recv(rbuf, count, dtype, rank + 1, tag, comm, MPI_STATUS_IGNORE));
        } else {
            rc = MCA_PML_CALL(
                send(rbuf, count, dtype, rank - 1, tag, MCA_PML_BASE_SEND_STANDARD, comm));
        }
    }
    mca_coll_bufpool_scratch_put(mem, span);
    return rc;
}

/* ---------------------------------------------------------------------- */

/* Block b of a count-element message split over p ranks: the first
 * count % p blocks have one element more. */
static inline void block_of(size_t count, int p, int b, size_t *disp, size_t *len)
{
    size_t base = count / (size_t)p, rem = count % (size_t)p;
    *len = base + ((size_t)b < rem ? 1 : 0);
    *disp = (size_t)b * base + ((size_t)b < rem ? (size_t)b : rem);
}

typedef struct rsag_ctx {
    struct ompi_communicator_t *comm;
    int rank, size;
    struct ompi_datatype_t *dtype;
    bufpool_segs_t mine; /* segments of my block */
} rsag_ctx_t;

/* Unit u of my reduce-scatter stream: segment u / (p-1) of my block from
 * the (1 + u % (p-1))-th rank to my left.  Segment-major order keeps the
 * accumulator segment in cache while all sources are folded into it. */
static void rsag_describe(void *arg, size_t unit, bufpool_recv_unit_t *out)
{
    rsag_ctx_t *c = arg;
    size_t j = unit / (size_t)(c->size - 1);
    int k = 1 + (int)(unit % (size_t)(c->size - 1));
    out->peer = (c->rank - k + c->size) % c->size;
    out->count = bufpool_segs_count(&c->mine, j);
    out->dtype = c->dtype;
    out->buf = NULL;
}

static int allreduce_rsag(const void *sbuf, void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          mca_coll_bufpool_module_t *module)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int tag_rs = MCA_COLL_BASE_TAG_ALLREDUCE, tag_ag = MCA_COLL_BASE_TAG_ALLGATHER;
    const bool in_place = MPI_IN_PLACE == sbuf;
    const char *src = in_place ? (const char *)rbuf : (const char *)sbuf;
    rsag_ctx_t ctx = {.comm = comm, .rank = rank, .size = size, .dtype = dtype};
    bufpool_reqs_t reqs;
    bufpool_slots_t slots = {0};
    bufpool_rwin_t win;
    size_t my_disp, my_len;
    int rc;

    block_of(count, size, rank, &my_disp, &my_len);
    bufpool_segs_init(&ctx.mine, my_len, dtype, COMPONENT->segment_size);
    const ptrdiff_t extent = ctx.mine.extent;
    bufpool_reqs_init(&reqs, module, comm);

    /* Allgather receives straight into rbuf, and reduce-scatter sends of
     * my contribution to every other block, all posted before any wait. */
    for (int k = 1; k < size; k++) {
        int peer = (rank + k) % size;
        size_t disp, len;
        bufpool_segs_t segs;
        block_of(count, size, peer, &disp, &len);
        bufpool_segs_init(&segs, len, dtype, COMPONENT->segment_size);
        for (size_t j = 0; j < segs.nseg; j++) {
            ptrdiff_t off = (ptrdiff_t)disp * extent + bufpool_segs_offset(&segs, j);
            rc = bufpool_reqs_recv(&reqs, (char *)rbuf + off, bufpool_segs_count(&segs, j), dtype,
                                   peer, tag_ag);
            if (OMPI_SUCCESS != rc) {
                goto out;
            }
        }
    }
    {
        /* Segment-major, to match the receivers' order (rsag_describe). */
        size_t max_nseg = 0;
        for (int b = 0; b < size; b++) {
            size_t disp, len;
            bufpool_segs_t segs;
            block_of(count, size, b, &disp, &len);
            bufpool_segs_init(&segs, len, dtype, COMPONENT->segment_size);
            max_nseg = segs.nseg > max_nseg ? segs.nseg : max_nseg;
        }
        for (size_t j = 0; j < max_nseg; j++) {
            for (int k = 1; k < size; k++) {
                int peer = (rank + k) % size;
                size_t disp, len;
                bufpool_segs_t segs;
                block_of(count, size, peer, &disp, &len);
                bufpool_segs_init(&segs, len, dtype, COMPONENT->segment_size);
                if (j >= segs.nseg) {
                    continue;
                }
                ptrdiff_t off = (ptrdiff_t)disp * extent + bufpool_segs_offset(&segs, j);
                rc = bufpool_reqs_send(&reqs, src + off, bufpool_segs_count(&segs, j), dtype, peer,
                                       tag_rs);
                if (OMPI_SUCCESS != rc) {
                    goto out;
                }
            }
        }
    }

    /* Reduce my block segment by segment as contributions stream in. */
    const size_t nunits = ctx.mine.nseg * (size_t)(size - 1);
    const int depth = bufpool_depth_for(nunits);
    rc = bufpool_slots_get(&slots, depth, ctx.mine.seg_span, ctx.mine.gap);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    rc = bufpool_rwin_start(&win, comm, tag_rs, &slots, (size_t)depth, nunits, rsag_describe, &ctx);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    for (size_t j = 0; j < ctx.mine.nseg; j++) {
        size_t n = bufpool_segs_count(&ctx.mine, j);
        ptrdiff_t off = (ptrdiff_t)my_disp * extent + bufpool_segs_offset(&ctx.mine, j);
        char *acc = (char *)rbuf + off;
        for (int k = 1; k < size; k++) {
            size_t unit = j * (size_t)(size - 1) + (size_t)(k - 1);
            void *in;
            rc = bufpool_rwin_wait(&win, unit, &in);
            if (OMPI_SUCCESS != rc) {
                bufpool_rwin_abort(&win);
                goto out;
            }
            if (1 == k && !in_place) {
                bufpool_reduce3(op, in, src + off, acc, n, dtype);
            } else {
                bufpool_reduce(op, in, acc, n, dtype);
            }
            rc = bufpool_rwin_release(&win, unit);
            if (OMPI_SUCCESS != rc) {
                bufpool_rwin_abort(&win);
                goto out;
            }
        }
        /* Segment j of my block is final: start its allgather now. */
        for (int k = 1; k < size; k++) {
            rc = bufpool_reqs_send(&reqs, acc, n, dtype, (rank + k) % size, tag_ag);
            if (OMPI_SUCCESS != rc) {
                goto out;
            }
        }
    }

out : {
    /* Complete everything posted, even on error, before the scratch
         * and the user's buffers go away. */
    int wait_rc = bufpool_reqs_wait(&reqs);
    if (OMPI_SUCCESS == rc) {
        rc = wait_rc;
    }
}
    bufpool_slots_put(&slots);
    return rc;
}

/* ---------------------------------------------------------------------- */

int mca_coll_bufpool_allreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    size_t type_size;
    ptrdiff_t gap;

    if (count <= 0) {
        return OMPI_SUCCESS;
    }
    ompi_datatype_type_size(dtype, &type_size);
    const size_t bytes = type_size * (size_t)count;
    const size_t span = bufpool_span(dtype, (size_t)count, &gap);
    const bool commute = ompi_op_is_commute(op);
    const size_t bound = COMPONENT->segment_size * (size_t)COMPONENT->pipeline_depth;

    if (bytes < COMPONENT->min_size) {
        return BUFPOOL_FALLBACK(module, allreduce, sbuf, rbuf, count, dtype, op, comm);
    }

    int alg = bufpool_forced_algorithm(BUFPOOL_COLL_allreduce);
    if (BUFPOOL_ALG_AUTO == alg) {
        alg = (span <= COMPONENT->small_size || (size_t)count < (size_t)ompi_comm_size(comm) ||
               !commute)
                  ? BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING
                  : BUFPOOL_ALLREDUCE_RSAG;
    }
    /* recursive_doubling needs a whole message of scratch: only within the
     * bound.  rsag reorders the reduction: commutative operations only. */
    if ((BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == alg && span > bound) ||
        (BUFPOOL_ALLREDUCE_RSAG == alg && !commute)) {
        return BUFPOOL_FALLBACK(module, allreduce, sbuf, rbuf, count, dtype, op, comm);
    }

    bufpool_count_call(BUFPOOL_COLL_allreduce);
    if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == alg) {
        return allreduce_recursive_doubling(sbuf, rbuf, (size_t)count, dtype, op, comm);
    }
    return allreduce_rsag(sbuf, rbuf, (size_t)count, dtype, op, comm, module);
}
