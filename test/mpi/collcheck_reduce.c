/*
 * One reduction case: allreduce, reduce, reduce_scatter(_block), scan or
 * exscan, checked against the serial fold of every rank's inputs.
 */
#include "collcheck.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which elements each rank contributes and which slice of the fold over
 * which ranks it must end up with. */
typedef struct {
    size_t contributed; /* elements in each rank's input */
    size_t first;       /* first element of this rank's result */
    size_t result;      /* elements in this rank's result */
    int fold_begin, fold_end;
    bool has_recvbuf;  /* false: recvbuf is insignificant here and passed as NULL */
    bool check_result; /* false: the standard leaves the result undefined */
} reduce_layout;

static reduce_layout layout_of(const cc_comm *comm, const cc_reduce_case *rc, int *recvcounts)
{
    int p = comm->size, me = comm->rank;
    reduce_layout l = {rc->count, 0, rc->count, 0, p, true, true};
    switch (rc->coll) {
        case CC_REDUCE:
            l.has_recvbuf = l.check_result = me == rc->root;
            break;
        case CC_REDUCE_SCATTER:
            l.contributed = 0;
            for (int k = 0; k < p; k++) {
                recvcounts[k] = cc_uneven_count(rc->count, k);
                if (k == me) {
                    l.first = l.contributed;
                }
                l.contributed += (size_t)recvcounts[k];
            }
            l.result = (size_t)recvcounts[me];
            break;
        case CC_REDUCE_SCATTER_BLOCK:
            l.contributed = rc->count * (size_t)p;
            l.first = rc->count * (size_t)me;
            break;
        case CC_SCAN:
            l.fold_end = me + 1;
            break;
        case CC_EXSCAN:
            l.fold_end = me;
            l.check_result = me > 0; /* rank 0's exscan result is undefined */
            break;
        default:
            break;
    }
    return l;
}

static void describe_recvcounts(const int *recvcounts, int p, char *out, size_t n)
{
    size_t used = (size_t)snprintf(out, n, "recvcounts=[");
    for (int k = 0; k < p && used < n; k++) {
        used += (size_t)snprintf(out + used, n - used, "%s%d", k ? "," : "", recvcounts[k]);
    }
    if (used < n) {
        snprintf(out + used, n - used, "]");
    }
}

/* A reduction between its start and its check (cc_pending's kind). */
typedef struct {
    cc_reduce_case rc;
    cc_case c;
    reduce_layout l;
    int *recvcounts;
    char counts_text[160];
    bool in_place;
    cc_buffer send, recv;
    unsigned char *send_copy;
} reduce_state;

static int reduce_issue(cc_form form, cc_coll coll, const void *sbuf, void *rbuf, int count,
                        const int *recvcounts, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                        MPI_Request *req)
{
    switch (form) {
        case CC_FORM_NONBLOCKING:
            switch (coll) {
                case CC_ALLREDUCE:
                    return MPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req);
                case CC_REDUCE:
                    return MPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, req);
                case CC_REDUCE_SCATTER:
                    return MPI_Ireduce_scatter(sbuf, rbuf, recvcounts, dt, op, comm, req);
                case CC_REDUCE_SCATTER_BLOCK:
                    return MPI_Ireduce_scatter_block(sbuf, rbuf, count, dt, op, comm, req);
                case CC_SCAN:
                    return MPI_Iscan(sbuf, rbuf, count, dt, op, comm, req);
                default:
                    return MPI_Iexscan(sbuf, rbuf, count, dt, op, comm, req);
            }
        case CC_FORM_PERSISTENT:
            switch (coll) {
                case CC_ALLREDUCE:
                    return PCOLL_INIT(Allreduce)(sbuf, rbuf, count, dt, op, comm, MPI_INFO_NULL,
                                                 req);
                case CC_REDUCE:
                    return PCOLL_INIT(Reduce)(sbuf, rbuf, count, dt, op, root, comm, MPI_INFO_NULL,
                                              req);
                case CC_REDUCE_SCATTER:
                    return PCOLL_INIT(Reduce_scatter)(sbuf, rbuf, recvcounts, dt, op, comm,
                                                      MPI_INFO_NULL, req);
                case CC_REDUCE_SCATTER_BLOCK:
                    return PCOLL_INIT(Reduce_scatter_block)(sbuf, rbuf, count, dt, op, comm,
                                                            MPI_INFO_NULL, req);
                case CC_SCAN:
                    return PCOLL_INIT(Scan)(sbuf, rbuf, count, dt, op, comm, MPI_INFO_NULL, req);
                default:
                    return PCOLL_INIT(Exscan)(sbuf, rbuf, count, dt, op, comm, MPI_INFO_NULL, req);
            }
        default:
            switch (coll) {
                case CC_ALLREDUCE:
                    return MPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
                case CC_REDUCE:
                    return MPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
                case CC_REDUCE_SCATTER:
                    return MPI_Reduce_scatter(sbuf, rbuf, recvcounts, dt, op, comm);
                case CC_REDUCE_SCATTER_BLOCK:
                    return MPI_Reduce_scatter_block(sbuf, rbuf, count, dt, op, comm);
                case CC_SCAN:
                    return MPI_Scan(sbuf, rbuf, count, dt, op, comm);
                default:
                    return MPI_Exscan(sbuf, rbuf, count, dt, op, comm);
            }
    }
}

static void reduce_finish(cc_pending *p)
{
    reduce_state *st = p->kind;
    const cc_reduce_case *rc = &st->rc;
    const cc_type *t = rc->type;
    const size_t ext = t->extent;
    const reduce_layout *l = &st->l;
    cc_case *c = &st->c;

    if (l->has_recvbuf && l->check_result) {
        cc_inject_fault(t, &st->recv, l->result);
        unsigned char *expected = cc_xmalloc(l->result * ext);
        memset(expected, 0, l->result * ext);
        cc_fill_expected(t, rc->op, rc->salt, c->comm->size, l->fold_begin, l->fold_end, l->first,
                         l->result, expected);
        /* In place, the result is at the start of recvbuf; the rest of an
         * in-place reduce_scatter buffer is undefined afterwards. */
        cc_check_values(c, t, expected, st->recv.data, l->result, "result");
        free(expected);
    }
    if (l->has_recvbuf) {
        cc_check_guards(c, &st->recv, "receive buffer");
        cc_buffer_free(&st->recv);
    }
    if (!st->in_place) {
        cc_check_guards(c, &st->send, "send buffer");
        cc_check_unchanged(c, st->send_copy, st->send.data, st->send.bytes, "send buffer");
        cc_buffer_free(&st->send);
        free(st->send_copy);
    }
    free(st->recvcounts);
    free(st);
    cc_case_done();
}

cc_pending *cc_reduce_start(const cc_comm *comm, const cc_reduce_case *rc, cc_form form)
{
    const cc_type *t = rc->type;
    const size_t ext = t->extent;
    const int p = comm->size, me = comm->rank;
    reduce_state *st = cc_xmalloc(sizeof(*st));
    memset(st, 0, sizeof(*st));
    st->rc = *rc;
    st->recvcounts = cc_xmalloc(sizeof(int) * (size_t)p);
    st->l = layout_of(comm, rc, st->recvcounts);
    const reduce_layout *l = &st->l;
    if (rc->coll == CC_REDUCE_SCATTER) {
        describe_recvcounts(st->recvcounts, p, st->counts_text, sizeof(st->counts_text));
    }
    st->c = (cc_case){
        .coll = rc->coll,
        .type = t->name,
        .op = cc_op_name(rc->op),
        .count = rc->count,
        .counts = st->counts_text[0] ? st->counts_text : NULL,
        .root = rc->coll == CC_REDUCE ? rc->root : -1,
        .comm = comm,
        .in_place = rc->in_place,
        .thread = rc->thread,
        .form = form,
    };
    if (l->contributed > INT_MAX) {
        cc_fail(&st->c, "count does not fit an int: the test matrix is wrong");
        free(st->recvcounts);
        free(st);
        return NULL;
    }

    /* MPI_Reduce's non-roots have no recvbuf to be in place in. */
    st->in_place = rc->in_place && l->has_recvbuf;
    if (!st->in_place) {
        cc_buffer_alloc(&st->send, l->contributed * ext, CC_SEND_FILLER);
        cc_fill_input(t, rc->op, rc->salt, me, p, 0, l->contributed, st->send.data);
        st->send_copy = cc_xmalloc(st->send.bytes);
        memcpy(st->send_copy, st->send.data, st->send.bytes);
        cc_buffer_seal(&st->send);
    }
    if (l->has_recvbuf) {
        cc_buffer_alloc(&st->recv, (st->in_place ? l->contributed : l->result) * ext,
                        CC_RECV_SENTINEL);
        if (st->in_place) {
            cc_fill_input(t, rc->op, rc->salt, me, p, 0, l->contributed, st->recv.data);
        }
    }
    cc_pending *pd =
        cc_pending_new(form, &st->c, l->has_recvbuf ? &st->recv : NULL, reduce_finish, st);
    const int err =
        reduce_issue(form, rc->coll, st->in_place ? MPI_IN_PLACE : st->send.data,
                     l->has_recvbuf ? st->recv.data : NULL, (int)rc->count, st->recvcounts,
                     t->datatype, cc_op_handle(rc->op), rc->root, comm->comm, &pd->req);
    cc_pending_issued(pd, err);
    return pd;
}

void cc_run_reduce_case(const cc_comm *comm, const cc_reduce_case *rc)
{
    cc_pending_run(cc_reduce_start(comm, rc, cc_opts.form), rc->salt);
}
