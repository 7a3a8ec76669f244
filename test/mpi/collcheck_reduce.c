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

void cc_run_reduce_case(const cc_comm *comm, const cc_reduce_case *rc)
{
    const cc_type *t = rc->type;
    const size_t ext = t->extent;
    const int p = comm->size, me = comm->rank;
    int *recvcounts = cc_xmalloc(sizeof(int) * (size_t)p);
    reduce_layout l = layout_of(comm, rc, recvcounts);
    char counts_text[160] = "";
    if (rc->coll == CC_REDUCE_SCATTER) {
        describe_recvcounts(recvcounts, p, counts_text, sizeof(counts_text));
    }
    cc_case c = {
        .coll = rc->coll,
        .type = t->name,
        .op = cc_op_name(rc->op),
        .count = rc->count,
        .counts = counts_text[0] ? counts_text : NULL,
        .root = rc->coll == CC_REDUCE ? rc->root : -1,
        .comm = comm,
        .in_place = rc->in_place,
        .thread = rc->thread,
    };
    if (l.contributed > INT_MAX) {
        cc_fail(&c, "count does not fit an int: the test matrix is wrong");
        free(recvcounts);
        return;
    }

    /* MPI_Reduce's non-roots have no recvbuf to be in place in. */
    const bool in_place = rc->in_place && l.has_recvbuf;
    cc_buffer send = {0}, recv = {0};
    unsigned char *send_copy = NULL;
    if (!in_place) {
        cc_buffer_alloc(&send, l.contributed * ext, CC_SEND_FILLER);
        cc_fill_input(t, rc->op, rc->salt, me, p, 0, l.contributed, send.data);
        send_copy = cc_xmalloc(send.bytes);
        memcpy(send_copy, send.data, send.bytes);
    }
    if (l.has_recvbuf) {
        cc_buffer_alloc(&recv, (in_place ? l.contributed : l.result) * ext, CC_RECV_SENTINEL);
        if (in_place) {
            cc_fill_input(t, rc->op, rc->salt, me, p, 0, l.contributed, recv.data);
        }
    }
    const void *sbuf = in_place ? MPI_IN_PLACE : send.data;
    void *rbuf = l.has_recvbuf ? recv.data : NULL;
    const MPI_Datatype dt = t->datatype;
    const MPI_Op op = cc_op_handle(rc->op);
    const int count = (int)rc->count;
    int err = MPI_SUCCESS;
    switch (rc->coll) {
        case CC_ALLREDUCE:
            err = MPI_Allreduce(sbuf, rbuf, count, dt, op, comm->comm);
            break;
        case CC_REDUCE:
            err = MPI_Reduce(sbuf, rbuf, count, dt, op, rc->root, comm->comm);
            break;
        case CC_REDUCE_SCATTER:
            err = MPI_Reduce_scatter(sbuf, rbuf, recvcounts, dt, op, comm->comm);
            break;
        case CC_REDUCE_SCATTER_BLOCK:
            err = MPI_Reduce_scatter_block(sbuf, rbuf, count, dt, op, comm->comm);
            break;
        case CC_SCAN:
            err = MPI_Scan(sbuf, rbuf, count, dt, op, comm->comm);
            break;
        case CC_EXSCAN:
            err = MPI_Exscan(sbuf, rbuf, count, dt, op, comm->comm);
            break;
        default:
            cc_fail(&c, "not a reduction");
            break;
    }
    cc_check_mpi(&c, err, cc_coll_mpi_name(rc->coll));

    if (l.has_recvbuf && l.check_result) {
        cc_inject_fault(t, &recv, l.result);
        unsigned char *expected = cc_xmalloc(l.result * ext);
        memset(expected, 0, l.result * ext);
        cc_fill_expected(t, rc->op, rc->salt, p, l.fold_begin, l.fold_end, l.first, l.result,
                         expected);
        /* In place, the result is at the start of recvbuf; the rest of an
         * in-place reduce_scatter buffer is undefined afterwards. */
        cc_check_values(&c, t, expected, recv.data, l.result, "result");
        free(expected);
    }
    if (l.has_recvbuf) {
        cc_check_guards(&c, &recv, "receive buffer");
        cc_buffer_free(&recv);
    }
    if (!in_place) {
        cc_check_guards(&c, &send, "send buffer");
        cc_check_unchanged(&c, send_copy, send.data, send.bytes, "send buffer");
        cc_buffer_free(&send);
        free(send_copy);
    }
    free(recvcounts);
    cc_case_done();
}
