/*
 * Recursive doubling over a group of ranks (coll_bufpool_group.h).
 */
#include "coll_bufpool_group.h"

/* The stages of a recursive doubling, in order: fold the members beyond
 * the largest power of two into their left neighbours, the exchanges of
 * the power of two, the folded members' results back. */
enum { RD_FOLD, RD_STEP, RD_UNFOLD, RD_DONE };

/* One stage's transfers for every part: receive from src (-1: none) into
 * tmp, or into buf when into_buf, and send buf to dst (-1: none).
 * Blocking (bufpool_allreduce_rd_group): complete on return, a single part
 * going out blocking, so that the PML may send a small message inline (as
 * plain recursive doubling always did), several at once, so that their
 * transfers overlap.  Otherwise posted into r->req. */
static int rd_xfer(bufpool_rd_t *r, int dst, int src, bool into_buf, bool blocking)
{
    const bufpool_rd_parts_t *parts = &r->parts;
    if (blocking && 1 == parts->n) {
        void *into = into_buf ? parts->buf[0] : parts->tmp[0];
        if (src >= 0 && dst >= 0) {
            return bufpool_sendrecv(parts->buf[0], parts->count[0], r->dtype, dst, into,
                                    parts->count[0], r->dtype, src, r->tag, r->comm);
        }
        return src >= 0
                   ? bufpool_recv(into, parts->count[0], r->dtype, src, r->tag, r->comm)
                   : bufpool_send(parts->buf[0], parts->count[0], r->dtype, dst, r->tag, r->comm);
    }
    int rc = OMPI_SUCCESS;
    for (int i = 0; i < parts->n && OMPI_SUCCESS == rc; i++) {
        if (src >= 0) {
            rc = bufpool_irecv(into_buf ? parts->buf[i] : parts->tmp[i], parts->count[i], r->dtype,
                               src, r->tag, r->comm, &r->req[r->nreq]);
            r->nreq += OMPI_SUCCESS == rc;
        }
        if (OMPI_SUCCESS == rc && dst >= 0) {
            rc = bufpool_isend(parts->buf[i], parts->count[i], r->dtype, dst, r->tag, r->comm,
                               &r->req[r->nreq]);
            r->nreq += OMPI_SUCCESS == rc;
        }
    }
    if (blocking || OMPI_SUCCESS != rc) {
        /* (What was posted completes before an error returns.) */
        const int wait_rc = bufpool_wait_all((size_t)r->nreq, r->req);
        r->nreq = 0;
        rc = OMPI_SUCCESS == rc ? wait_rc : rc;
    }
    return rc;
}

/* The current stage's transfers. */
static int rd_transfers(bufpool_rd_t *r, bool blocking)
{
    const bufpool_group_t *g = r->group;
    const int me = g->me;
    switch (r->stage) {
        case RD_FOLD: /* member 2i sends to 2i+1, which combines "2i op 2i+1" */
            return 0 == me % 2 ? rd_xfer(r, bufpool_group_rank(g, me + 1), -1, false, blocking)
                               : rd_xfer(r, -1, bufpool_group_rank(g, me - 1), false, blocking);
        case RD_STEP: {
            const int peer_rank = bufpool_group_rank(g, r->peer);
            return rd_xfer(r, peer_rank, peer_rank, false, blocking);
        }
        case RD_UNFOLD:
            return 0 == me % 2 ? rd_xfer(r, -1, bufpool_group_rank(g, me + 1), true, blocking)
                               : rd_xfer(r, bufpool_group_rank(g, me - 1), -1, false, blocking);
        default:
            return OMPI_SUCCESS;
    }
}

/* Exchange step `mask` of the power of two (r->newrank's partner), or
 * what comes after the last: the folded member's result back, or the end. */
static void rd_step(bufpool_rd_t *r, int mask)
{
    if (r->newrank >= 0 && mask < r->pof2) {
        const int newpeer = r->newrank ^ mask;
        r->stage = RD_STEP;
        r->mask = mask;
        r->peer = newpeer < r->extra ? newpeer * 2 + 1 : newpeer + r->extra;
    } else {
        r->stage = r->group->me < 2 * r->extra ? RD_UNFOLD : RD_DONE;
    }
}

/* What follows the current stage's transfers: its reduction, and the next
 * stage.  Lower members are the left operand. */
static int rd_advance(bufpool_rd_t *r)
{
    const bufpool_rd_parts_t *parts = &r->parts;
    int rc = OMPI_SUCCESS;
    switch (r->stage) {
        case RD_FOLD:
            if (0 != r->group->me % 2) {
                for (int i = 0; i < parts->n; i++) {
                    bufpool_reduce(r->op, parts->tmp[i], parts->buf[i], parts->count[i], r->dtype);
                }
            }
            rd_step(r, 1);
            break;
        case RD_STEP:
            for (int i = 0; i < parts->n && OMPI_SUCCESS == rc; i++) {
                char *buf = parts->buf[i], *tmp = parts->tmp[i];
                if (r->peer < r->group->me) {
                    /* buf = peer op mine */
                    bufpool_reduce(r->op, tmp, buf, parts->count[i], r->dtype);
                } else {
                    /* tmp = mine op peer */
                    bufpool_reduce(r->op, buf, tmp, parts->count[i], r->dtype);
                    rc = bufpool_copy(buf, tmp, parts->count[i], r->dtype);
                }
            }
            rd_step(r, r->mask << 1);
            break;
        default:
            r->stage = RD_DONE;
            break;
    }
    return rc;
}

static void rd_init(bufpool_rd_t *r, const bufpool_rd_parts_t *parts, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, const bufpool_group_t *g, int tag,
                    struct ompi_communicator_t *comm)
{
    /* Field by field: the request array is written as it fills (a blocking
     * run of one part never touches it), not cleared on every call. */
    r->parts = *parts;
    r->dtype = dtype;
    r->op = op;
    r->group = g;
    r->tag = tag;
    r->comm = comm;
    r->nreq = 0;
    r->rc = OMPI_SUCCESS;
    r->mask = 0;
    r->peer = -1;
    r->pof2 = 1;
    while (r->pof2 * 2 <= g->n) {
        r->pof2 *= 2;
    }
    r->extra = g->n - r->pof2;
    if (g->me < 2 * r->extra) {
        r->newrank = 0 == g->me % 2 ? -1 : g->me / 2;
        r->stage = RD_FOLD;
    } else {
        r->newrank = g->me - r->extra;
        rd_step(r, 1);
    }
}

int bufpool_allreduce_rd_group(const bufpool_rd_parts_t *parts, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, const bufpool_group_t *g, int tag,
                               struct ompi_communicator_t *comm)
{
    bufpool_rd_t r;
    rd_init(&r, parts, dtype, op, g, tag, comm);
    int rc = OMPI_SUCCESS;
    while (RD_DONE != r.stage && OMPI_SUCCESS == rc) {
        rc = rd_transfers(&r, true);
        if (OMPI_SUCCESS == rc) {
            rc = rd_advance(&r);
        }
    }
    return rc;
}

int bufpool_rd_start(bufpool_rd_t *r, const bufpool_rd_parts_t *parts,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, const bufpool_group_t *g,
                     int tag, struct ompi_communicator_t *comm)
{
    rd_init(r, parts, dtype, op, g, tag, comm);
    r->rc = rd_transfers(r, false);
    return r->rc;
}

/* Stage after stage while the transfers are complete (wait: until the
 * end). */
static int rd_drive(bufpool_rd_t *r, bool wait)
{
    while (RD_DONE != r->stage && OMPI_SUCCESS == r->rc) {
        bool done = true;
        r->rc = wait ? bufpool_wait_all((size_t)r->nreq, r->req)
                     : bufpool_test_all((size_t)r->nreq, r->req, &done);
        if (OMPI_SUCCESS != r->rc) {
            r->nreq = 0; /* (complete: an error comes with the last of them) */
            break;
        }
        if (!done) {
            break;
        }
        r->nreq = 0;
        r->rc = rd_advance(r);
        if (OMPI_SUCCESS == r->rc) {
            r->rc = rd_transfers(r, false);
        }
    }
    return r->rc;
}

bool bufpool_rd_test(bufpool_rd_t *r)
{
    (void)rd_drive(r, false);
    return RD_DONE == r->stage || OMPI_SUCCESS != r->rc;
}

int bufpool_rd_wait(bufpool_rd_t *r)
{
    return rd_drive(r, true);
}
