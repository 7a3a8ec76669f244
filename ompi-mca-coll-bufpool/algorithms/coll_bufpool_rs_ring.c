/*
 * The ring reduce-scatter and the ring allgather of its blocks
 * (coll_bufpool_rs_stream.h), reduce_scatter's and allreduce's ring.
 */
#include "coll_bufpool_rs_stream.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"

/* ---------------------------------------------------------------------- */
/* The ring. */

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
            size_t n = bufpool_rs_seg_count(st->rcount, st->per, j);
            rc = NULL != rreq ? bufpool_irecv(at, n, dtype, st->from, st->tag, reqs->comm, &rreq[j])
                              : bufpool_reqs_recv(reqs, at, n, dtype, st->from, st->tag);
        }
        if (OMPI_SUCCESS == rc && j < snseg) {
            rc = bufpool_reqs_send(reqs, ring_seg(st->sdirect, st->sslots, st, j),
                                   bufpool_rs_seg_count(st->scount, st->per, j), dtype, st->to,
                                   st->tag);
        }
    }
    return rc;
}

int bufpool_ring_reduce_scatter(const bufpool_rs_stream_t *s, struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const bufpool_blocks_t *blocks = s->blocks;
    const size_t longest = bufpool_rs_blocks_longest(blocks);
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
                .scount = bufpool_rs_chunk_len(bufpool_blocks_len(blocks, sb), k, c),
                .rdirect = last && last_direct ? (char *)s->acc + chunk_off : NULL,
                .rslots = &part[(t + 1) % 2],
                .rcount = bufpool_rs_chunk_len(bufpool_blocks_len(blocks, rb), k, c),
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
                const size_t n = bufpool_rs_seg_count(st.rcount, per, j);
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
    const size_t longest = bufpool_rs_blocks_longest(blocks);
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
