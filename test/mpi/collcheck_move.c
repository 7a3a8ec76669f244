/*
 * One data-movement case: bcast, allgather, alltoall, gather or scatter.
 * Every block carries the pattern of (case salt, source rank, destination
 * rank), so each receiver knows exactly which bytes must arrive where.
 */
#include "collcheck.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocks that every destination receives alike use CC_ANY_DEST. */
#define CC_ANY_DEST 0xFFFFFFFFu

static uint64_t block_tag(int source, unsigned dest)
{
    return ((uint64_t)(unsigned)source << 32) | dest;
}

/* What `source` sends to each rank: block k is for rank k. */
static void fill_blocks(const cc_type *t, size_t count, int p, uint64_t salt, int source,
                        unsigned char *buf)
{
    size_t block = count * t->extent;
    for (int k = 0; k < p; k++) {
        cc_fill_pattern(t, count, salt, block_tag(source, (unsigned)k), buf + (size_t)k * block);
    }
}

/* What a rank receives from each: block k came from rank k. */
static void check_blocks(const cc_case *c, const cc_type *t, size_t count, int p, uint64_t salt,
                         unsigned dest, const unsigned char *buf)
{
    size_t block = count * t->extent;
    for (int k = 0; k < p; k++) {
        char what[64];
        snprintf(what, sizeof(what), "block from rank %d", k);
        if (!cc_check_pattern(c, t, buf + (size_t)k * block, count, salt, block_tag(k, dest),
                              what)) {
            return; /* one report per case is enough */
        }
    }
}

typedef struct {
    cc_buffer buf;
    unsigned char *copy; /* send buffers must come back unchanged */
} send_side;

static void send_prepare(send_side *s, const cc_type *t, size_t elems)
{
    cc_buffer_alloc(&s->buf, elems * t->extent, CC_SEND_FILLER);
    s->copy = NULL;
}

static void send_snapshot(send_side *s)
{
    s->copy = cc_xmalloc(s->buf.bytes);
    memcpy(s->copy, s->buf.data, s->buf.bytes);
}

static void send_verify_and_free(const cc_case *c, send_side *s)
{
    if (s->buf.base == NULL) {
        return;
    }
    cc_check_guards(c, &s->buf, "send buffer");
    cc_check_unchanged(c, s->copy, s->buf.data, s->buf.bytes, "send buffer");
    cc_buffer_free(&s->buf);
    free(s->copy);
    s->copy = NULL;
}

/* A send buffer holding one block of the pattern, kept to check that it
 * comes back unchanged. */
static void *send_block(send_side *s, const cc_type *t, size_t count, uint64_t salt, uint64_t tag)
{
    send_prepare(s, t, count);
    cc_fill_pattern(t, count, salt, tag, s->buf.data);
    send_snapshot(s);
    return s->buf.data;
}

/* Allgather and gather: this rank's own block, either in place at its slot
 * of the receive buffer or in a send buffer.  Returns the send argument. */
static const void *own_block(const cc_move_case *mc, bool in_place, int me, cc_buffer *recv,
                             send_side *send)
{
    const uint64_t tag = block_tag(me, CC_ANY_DEST);
    if (in_place) {
        const size_t rblock = mc->recvcount * mc->recvtype->extent;
        cc_fill_pattern(mc->recvtype, mc->recvcount, mc->salt, tag,
                        recv->data + (size_t)me * rblock);
        return MPI_IN_PLACE;
    }
    return send_block(send, mc->sendtype, mc->sendcount, mc->salt, tag);
}

void cc_run_move_case(const cc_comm *comm, const cc_move_case *mc)
{
    const cc_type *st = mc->sendtype, *rt = mc->recvtype;
    const int p = comm->size, me = comm->rank, root = mc->root;
    const bool rooted = mc->coll == CC_BCAST || mc->coll == CC_GATHER || mc->coll == CC_SCATTER;
    const bool is_root = rooted && me == root;
    char type_text[96], counts_text[96];
    if (st == rt && mc->sendcount == mc->recvcount) {
        snprintf(type_text, sizeof(type_text), "%s", st->name);
        counts_text[0] = '\0';
    } else {
        snprintf(type_text, sizeof(type_text), "%s->%s", st->name, rt->name);
        snprintf(counts_text, sizeof(counts_text), "(send %zu x %s, recv %zu x %s)", mc->sendcount,
                 st->name, mc->recvcount, rt->name);
    }
    cc_case c = {
        .coll = mc->coll,
        .type = type_text,
        .op = "-",
        .count = mc->recvcount,
        .counts = counts_text[0] ? counts_text : NULL,
        .root = rooted ? root : -1,
        .comm = comm,
        .in_place = mc->in_place,
        .thread = mc->thread,
    };
    if (mc->sendcount * (size_t)p > INT_MAX || mc->recvcount * (size_t)p > INT_MAX) {
        cc_fail(&c, "count does not fit an int: the test matrix is wrong");
        return;
    }
    const int scount = (int)mc->sendcount, rcount = (int)mc->recvcount;
    const size_t rblock = mc->recvcount * rt->extent;
    send_side send = {{0}, NULL};
    cc_buffer recv = {0};
    int err = MPI_SUCCESS;

    switch (mc->coll) {
        case CC_BCAST:
            if (is_root) {
                void *sbuf =
                    send_block(&send, st, mc->sendcount, mc->salt, block_tag(root, CC_ANY_DEST));
                err = MPI_Bcast(sbuf, scount, st->datatype, root, comm->comm);
            } else {
                cc_buffer_alloc(&recv, rblock, CC_RECV_SENTINEL);
                err = MPI_Bcast(recv.data, rcount, rt->datatype, root, comm->comm);
            }
            cc_check_mpi(&c, err, "MPI_Bcast");
            if (!is_root) {
                cc_inject_fault(rt, &recv, mc->recvcount);
                cc_check_pattern(&c, rt, recv.data, mc->recvcount, mc->salt,
                                 block_tag(root, CC_ANY_DEST), "received data");
            }
            break;

        case CC_ALLGATHER: {
            cc_buffer_alloc(&recv, rblock * (size_t)p, CC_RECV_SENTINEL);
            const void *sbuf = own_block(mc, mc->in_place, me, &recv, &send);
            err = MPI_Allgather(sbuf, scount, st->datatype, recv.data, rcount, rt->datatype,
                                comm->comm);
            cc_check_mpi(&c, err, "MPI_Allgather");
            cc_inject_fault(rt, &recv, mc->recvcount * (size_t)p);
            check_blocks(&c, rt, mc->recvcount, p, mc->salt, CC_ANY_DEST, recv.data);
            break;
        }

        case CC_ALLTOALL: {
            cc_buffer_alloc(&recv, rblock * (size_t)p, CC_RECV_SENTINEL);
            const void *sbuf = MPI_IN_PLACE;
            if (mc->in_place) {
                fill_blocks(rt, mc->recvcount, p, mc->salt, me, recv.data);
            } else {
                send_prepare(&send, st, mc->sendcount * (size_t)p);
                fill_blocks(st, mc->sendcount, p, mc->salt, me, send.buf.data);
                send_snapshot(&send);
                sbuf = send.buf.data;
            }
            err = MPI_Alltoall(sbuf, scount, st->datatype, recv.data, rcount, rt->datatype,
                               comm->comm);
            cc_check_mpi(&c, err, "MPI_Alltoall");
            cc_inject_fault(rt, &recv, mc->recvcount * (size_t)p);
            check_blocks(&c, rt, mc->recvcount, p, mc->salt, (unsigned)me, recv.data);
            break;
        }

        case CC_GATHER: {
            if (is_root) {
                cc_buffer_alloc(&recv, rblock * (size_t)p, CC_RECV_SENTINEL);
            }
            const void *sbuf = own_block(mc, is_root && mc->in_place, me, &recv, &send);
            /* recvbuf is insignificant on non-roots: NULL proves it is not touched */
            err = MPI_Gather(sbuf, scount, st->datatype, is_root ? recv.data : NULL, rcount,
                             rt->datatype, root, comm->comm);
            cc_check_mpi(&c, err, "MPI_Gather");
            if (is_root) {
                cc_inject_fault(rt, &recv, mc->recvcount * (size_t)p);
                check_blocks(&c, rt, mc->recvcount, p, mc->salt, CC_ANY_DEST, recv.data);
            }
            break;
        }

        case CC_SCATTER: {
            void *rbuf = MPI_IN_PLACE;
            if (is_root) {
                send_prepare(&send, st, mc->sendcount * (size_t)p);
                fill_blocks(st, mc->sendcount, p, mc->salt, root, send.buf.data);
                send_snapshot(&send);
            }
            if (!(is_root && mc->in_place)) {
                cc_buffer_alloc(&recv, rblock, CC_RECV_SENTINEL);
                rbuf = recv.data;
            }
            /* sendbuf is insignificant on non-roots */
            err = MPI_Scatter(is_root ? send.buf.data : NULL, scount, st->datatype, rbuf, rcount,
                              rt->datatype, root, comm->comm);
            cc_check_mpi(&c, err, "MPI_Scatter");
            if (recv.base != NULL) {
                cc_inject_fault(rt, &recv, mc->recvcount);
                cc_check_pattern(&c, rt, recv.data, mc->recvcount, mc->salt,
                                 block_tag(root, (unsigned)me), "received block");
            }
            break;
        }

        default:
            cc_fail(&c, "not a data-movement collective");
            break;
    }

    if (recv.base != NULL) {
        cc_check_guards(&c, &recv, "receive buffer");
        cc_buffer_free(&recv);
    }
    send_verify_and_free(&c, &send);
    cc_case_done();
}
