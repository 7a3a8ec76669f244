/*
 * Recursive doubling over a group of ranks (coll_bufpool_group.h).
 */
#include "coll_bufpool_group.h"

/* One step of recursive doubling for every part: receive from src (-1:
 * none) into tmp, or into buf when into_buf, and send buf to dst (-1:
 * none); wait for all.  A single part goes out blocking, so that the PML
 * may send a small message inline (as plain recursive doubling always
 * did); several go out at once, so that their transfers overlap. */
static int rd_xfer(const bufpool_rd_parts_t *parts, int dst, int src, bool into_buf,
                   struct ompi_datatype_t *dtype, int tag, struct ompi_communicator_t *comm)
{
    if (1 == parts->n) {
        void *into = into_buf ? parts->buf[0] : parts->tmp[0];
        if (src >= 0 && dst >= 0) {
            return bufpool_sendrecv(parts->buf[0], parts->count[0], dtype, dst, into,
                                    parts->count[0], dtype, src, tag, comm);
        }
        return src >= 0 ? bufpool_recv(into, parts->count[0], dtype, src, tag, comm)
                        : bufpool_send(parts->buf[0], parts->count[0], dtype, dst, tag, comm);
    }
    ompi_request_t *req[2 * BUFPOOL_MAX_DEPTH];
    int n = 0, rc = OMPI_SUCCESS;
    for (int i = 0; i < parts->n && OMPI_SUCCESS == rc; i++) {
        if (src >= 0) {
            rc = bufpool_irecv(into_buf ? parts->buf[i] : parts->tmp[i], parts->count[i], dtype,
                               src, tag, comm, &req[n]);
            n += OMPI_SUCCESS == rc;
        }
        if (OMPI_SUCCESS == rc && dst >= 0) {
            rc = bufpool_isend(parts->buf[i], parts->count[i], dtype, dst, tag, comm, &req[n]);
            n += OMPI_SUCCESS == rc;
        }
    }
    int wait_rc = bufpool_wait_all(n, req);
    return OMPI_SUCCESS == rc ? wait_rc : rc;
}

int bufpool_allreduce_rd_group(const bufpool_rd_parts_t *parts, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, const bufpool_group_t *g, int tag,
                               struct ompi_communicator_t *comm)
{
    const int me = g->me, size = g->n;
    int rc = OMPI_SUCCESS, pof2 = 1;
    while (pof2 * 2 <= size) {
        pof2 *= 2;
    }
    const int extra = size - pof2;
    int newrank;

    /* Fold the members beyond the largest power of two into their left
     * neighbours: member 2i sends to 2i+1, which combines "2i op 2i+1". */
    if (me < 2 * extra) {
        if (0 == me % 2) {
            rc = rd_xfer(parts, bufpool_group_rank(g, me + 1), -1, false, dtype, tag, comm);
            newrank = -1;
        } else {
            rc = rd_xfer(parts, -1, bufpool_group_rank(g, me - 1), false, dtype, tag, comm);
            for (int i = 0; i < parts->n && OMPI_SUCCESS == rc; i++) {
                bufpool_reduce(op, parts->tmp[i], parts->buf[i], parts->count[i], dtype);
            }
            newrank = me / 2;
        }
    } else {
        newrank = me - extra;
    }

    for (int mask = 1; OMPI_SUCCESS == rc && newrank >= 0 && mask < pof2; mask <<= 1) {
        int newpeer = newrank ^ mask;
        int peer = newpeer < extra ? newpeer * 2 + 1 : newpeer + extra;
        const int peer_rank = bufpool_group_rank(g, peer);
        rc = rd_xfer(parts, peer_rank, peer_rank, false, dtype, tag, comm);
        for (int i = 0; i < parts->n && OMPI_SUCCESS == rc; i++) {
            char *buf = parts->buf[i], *tmp = parts->tmp[i];
            if (peer < me) {
                bufpool_reduce(op, tmp, buf, parts->count[i], dtype); /* buf = peer op mine */
            } else {
                bufpool_reduce(op, buf, tmp, parts->count[i], dtype); /* tmp = mine op peer */
                rc = bufpool_copy(buf, tmp, parts->count[i], dtype);
            }
        }
    }

    /* Give the folded members their result. */
    if (OMPI_SUCCESS == rc && me < 2 * extra) {
        rc = 0 == me % 2
                 ? rd_xfer(parts, -1, bufpool_group_rank(g, me + 1), true, dtype, tag, comm)
                 : rd_xfer(parts, bufpool_group_rank(g, me - 1), -1, false, dtype, tag, comm);
    }
    return rc;
}
