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

/* The buffer's bytes, kept to check it comes back unchanged; sealed read-only
 * until then where MPI's argument is const (seal). */
static void send_snapshot(send_side *s, bool seal)
{
    s->copy = cc_xmalloc(s->buf.bytes);
    memcpy(s->copy, s->buf.data, s->buf.bytes);
    if (seal) {
        cc_buffer_seal(&s->buf);
    }
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
 * comes back unchanged (seal: send_snapshot). */
static void *send_block(send_side *s, const cc_type *t, size_t count, uint64_t salt, uint64_t tag,
                        bool seal)
{
    send_prepare(s, t, count);
    cc_fill_pattern(t, count, salt, tag, s->buf.data);
    send_snapshot(s, seal);
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
    return send_block(send, mc->sendtype, mc->sendcount, mc->salt, tag, true);
}

/* A data movement between its start and its check (cc_pending's kind). */
typedef struct {
    cc_move_case mc;
    cc_case c;
    char type_text[96], counts_text[96];
    send_side send;
    cc_buffer recv;
    bool is_root;
} move_state;

static int move_issue(cc_form form, cc_coll coll, const void *sbuf, int scount, MPI_Datatype st,
                      void *rbuf, int rcount, MPI_Datatype rt, int root, MPI_Comm comm,
                      MPI_Request *req)
{
    switch (form) {
        case CC_FORM_NONBLOCKING:
            switch (coll) {
                case CC_BCAST: /* the root's buffer is sbuf, the others' rbuf */
                    return NULL != sbuf ? MPI_Ibcast((void *)sbuf, scount, st, root, comm, req)
                                        : MPI_Ibcast(rbuf, rcount, rt, root, comm, req);
                case CC_ALLGATHER:
                    return MPI_Iallgather(sbuf, scount, st, rbuf, rcount, rt, comm, req);
                case CC_ALLTOALL:
                    return MPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, comm, req);
                case CC_GATHER:
                    return MPI_Igather(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
                default:
                    return MPI_Iscatter(sbuf, scount, st, rbuf, rcount, rt, root, comm, req);
            }
        case CC_FORM_PERSISTENT:
            switch (coll) {
                case CC_BCAST:
                    return NULL != sbuf ? PCOLL_INIT(Bcast)((void *)sbuf, scount, st, root, comm,
                                                            MPI_INFO_NULL, req)
                                        : PCOLL_INIT(Bcast)(rbuf, rcount, rt, root, comm,
                                                            MPI_INFO_NULL, req);
                case CC_ALLGATHER:
                    return PCOLL_INIT(Allgather)(sbuf, scount, st, rbuf, rcount, rt, comm,
                                                 MPI_INFO_NULL, req);
                case CC_ALLTOALL:
                    return PCOLL_INIT(Alltoall)(sbuf, scount, st, rbuf, rcount, rt, comm,
                                                MPI_INFO_NULL, req);
                case CC_GATHER:
                    return PCOLL_INIT(Gather)(sbuf, scount, st, rbuf, rcount, rt, root, comm,
                                              MPI_INFO_NULL, req);
                default:
                    return PCOLL_INIT(Scatter)(sbuf, scount, st, rbuf, rcount, rt, root, comm,
                                               MPI_INFO_NULL, req);
            }
        default:
            switch (coll) {
                case CC_BCAST:
                    return NULL != sbuf ? MPI_Bcast((void *)sbuf, scount, st, root, comm)
                                        : MPI_Bcast(rbuf, rcount, rt, root, comm);
                case CC_ALLGATHER:
                    return MPI_Allgather(sbuf, scount, st, rbuf, rcount, rt, comm);
                case CC_ALLTOALL:
                    return MPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
                case CC_GATHER:
                    return MPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, comm);
                default:
                    return MPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, comm);
            }
    }
}

static void move_finish(cc_pending *p)
{
    move_state *s = p->kind;
    const cc_move_case *mc = &s->mc;
    const cc_type *rt = mc->recvtype;
    const cc_case *c = &s->c;
    const int pn = c->comm->size, me = c->comm->rank, root = mc->root;

    switch (mc->coll) {
        case CC_BCAST:
            if (!s->is_root) {
                cc_inject_fault(rt, &s->recv, mc->recvcount);
                cc_check_pattern(c, rt, s->recv.data, mc->recvcount, mc->salt,
                                 block_tag(root, CC_ANY_DEST), "received data");
            }
            break;
        case CC_ALLGATHER:
            cc_inject_fault(rt, &s->recv, mc->recvcount * (size_t)pn);
            check_blocks(c, rt, mc->recvcount, pn, mc->salt, CC_ANY_DEST, s->recv.data);
            break;
        case CC_ALLTOALL:
            cc_inject_fault(rt, &s->recv, mc->recvcount * (size_t)pn);
            check_blocks(c, rt, mc->recvcount, pn, mc->salt, (unsigned)me, s->recv.data);
            break;
        case CC_GATHER:
            if (s->is_root) {
                cc_inject_fault(rt, &s->recv, mc->recvcount * (size_t)pn);
                check_blocks(c, rt, mc->recvcount, pn, mc->salt, CC_ANY_DEST, s->recv.data);
            }
            break;
        default:
            if (s->recv.base != NULL) {
                cc_inject_fault(rt, &s->recv, mc->recvcount);
                cc_check_pattern(c, rt, s->recv.data, mc->recvcount, mc->salt,
                                 block_tag(root, (unsigned)me), "received block");
            }
            break;
    }
    if (s->recv.base != NULL) {
        cc_check_guards(c, &s->recv, "receive buffer");
        cc_buffer_free(&s->recv);
    }
    send_verify_and_free(c, &s->send);
    free(s);
    cc_case_done();
}

cc_pending *cc_move_start(const cc_comm *comm, const cc_move_case *mc, cc_form form)
{
    const cc_type *st = mc->sendtype, *rt = mc->recvtype;
    const int p = comm->size, me = comm->rank, root = mc->root;
    const bool rooted = mc->coll == CC_BCAST || mc->coll == CC_GATHER || mc->coll == CC_SCATTER;
    move_state *s = cc_xmalloc(sizeof(*s));
    memset(s, 0, sizeof(*s));
    s->mc = *mc;
    s->is_root = rooted && me == root;
    if (st == rt && mc->sendcount == mc->recvcount) {
        snprintf(s->type_text, sizeof(s->type_text), "%s", st->name);
        s->counts_text[0] = '\0';
    } else {
        snprintf(s->type_text, sizeof(s->type_text), "%s->%s", st->name, rt->name);
        snprintf(s->counts_text, sizeof(s->counts_text), "(send %zu x %s, recv %zu x %s)",
                 mc->sendcount, st->name, mc->recvcount, rt->name);
    }
    s->c = (cc_case){
        .coll = mc->coll,
        .type = s->type_text,
        .op = "-",
        .count = mc->recvcount,
        .counts = s->counts_text[0] ? s->counts_text : NULL,
        .root = rooted ? root : -1,
        .comm = comm,
        .in_place = mc->in_place,
        .thread = mc->thread,
        .form = form,
    };
    if (mc->sendcount * (size_t)p > INT_MAX || mc->recvcount * (size_t)p > INT_MAX) {
        cc_fail(&s->c, "count does not fit an int: the test matrix is wrong");
        free(s);
        return NULL;
    }
    const int scount = (int)mc->sendcount, rcount = (int)mc->recvcount;
    const size_t rblock = mc->recvcount * rt->extent;
    const void *sbuf = NULL;
    void *rbuf = NULL;

    switch (mc->coll) {
        case CC_BCAST:
            if (s->is_root) {
                /* MPI_Bcast's buffer is INOUT: sealed on request only. */
                sbuf = send_block(&s->send, st, mc->sendcount, mc->salt,
                                  block_tag(root, CC_ANY_DEST), cc_opts.seal_bcast_root);
            } else {
                cc_buffer_alloc(&s->recv, rblock, CC_RECV_SENTINEL);
                rbuf = s->recv.data;
            }
            break;
        case CC_ALLGATHER:
            cc_buffer_alloc(&s->recv, rblock * (size_t)p, CC_RECV_SENTINEL);
            sbuf = own_block(mc, mc->in_place, me, &s->recv, &s->send);
            rbuf = s->recv.data;
            break;
        case CC_ALLTOALL:
            cc_buffer_alloc(&s->recv, rblock * (size_t)p, CC_RECV_SENTINEL);
            rbuf = s->recv.data;
            if (mc->in_place) {
                fill_blocks(rt, mc->recvcount, p, mc->salt, me, s->recv.data);
                sbuf = MPI_IN_PLACE;
            } else {
                send_prepare(&s->send, st, mc->sendcount * (size_t)p);
                fill_blocks(st, mc->sendcount, p, mc->salt, me, s->send.buf.data);
                send_snapshot(&s->send, true);
                sbuf = s->send.buf.data;
            }
            break;
        case CC_GATHER:
            if (s->is_root) {
                cc_buffer_alloc(&s->recv, rblock * (size_t)p, CC_RECV_SENTINEL);
                /* recvbuf is insignificant on non-roots: NULL proves it is not touched */
                rbuf = s->recv.data;
            }
            sbuf = own_block(mc, s->is_root && mc->in_place, me, &s->recv, &s->send);
            break;
        default: /* CC_SCATTER */
            rbuf = MPI_IN_PLACE;
            if (s->is_root) {
                send_prepare(&s->send, st, mc->sendcount * (size_t)p);
                fill_blocks(st, mc->sendcount, p, mc->salt, root, s->send.buf.data);
                send_snapshot(&s->send, true);
                sbuf = s->send.buf.data; /* sendbuf is insignificant on non-roots */
            }
            if (!(s->is_root && mc->in_place)) {
                cc_buffer_alloc(&s->recv, rblock, CC_RECV_SENTINEL);
                rbuf = s->recv.data;
            }
            break;
    }
    cc_pending *pd =
        cc_pending_new(form, &s->c, s->recv.base != NULL ? &s->recv : NULL, move_finish, s);
    const int err = move_issue(form, mc->coll, sbuf, scount, st->datatype, rbuf, rcount,
                               rt->datatype, root, comm->comm, &pd->req);
    cc_pending_issued(pd, err);
    return pd;
}

void cc_run_move_case(const cc_comm *comm, const cc_move_case *mc)
{
    cc_pending_run(cc_move_start(comm, mc, cc_opts.form), mc->salt);
}
