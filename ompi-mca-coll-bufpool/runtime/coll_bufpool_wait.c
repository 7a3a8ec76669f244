/*
 * The point-to-point primitives of every bufpool algorithm (see
 * coll_bufpool_wait.h): the PML's calls outside a task, post-and-yield
 * inside one.
 */
#include "coll_bufpool_wait.h"
#include "coll_bufpool_task.h"

#include "bufpool_cpu_relax.h"

#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"
#include "ompi/op/op.h"

int bufpool_isend(const void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                  struct ompi_communicator_t *comm, ompi_request_t **req)
{
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task) {
        tag = bufpool_task_tag(task, tag);
    }
    return MCA_PML_CALL(isend(buf, count, dtype, peer, tag, MCA_PML_BASE_SEND_STANDARD, comm, req));
}

int bufpool_irecv(void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                  struct ompi_communicator_t *comm, ompi_request_t **req)
{
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task) {
        tag = bufpool_task_tag(task, tag);
    }
    return MCA_PML_CALL(irecv(buf, count, dtype, peer, tag, comm, req));
}

/* Inside a task: wait for one request posted just now. */
static int task_wait_one(bufpool_task_t *task, ompi_request_t **req)
{
    bufpool_task_await(task, req, 1);
    return ompi_request_wait(req, MPI_STATUS_IGNORE);
}

int bufpool_send(const void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                 struct ompi_communicator_t *comm)
{
    bufpool_task_t *task = bufpool_task_current();
    if (NULL == task) {
        /* Blocking: the PML may send a small message inline. */
        return MCA_PML_CALL(send(buf, count, dtype, peer, tag, MCA_PML_BASE_SEND_STANDARD, comm));
    }
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = MCA_PML_CALL(isend(buf, count, dtype, peer, bufpool_task_tag(task, tag),
                                MCA_PML_BASE_SEND_STANDARD, comm, &req));
    return OMPI_SUCCESS == rc ? task_wait_one(task, &req) : rc;
}

int bufpool_recv(void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                 struct ompi_communicator_t *comm)
{
    bufpool_task_t *task = bufpool_task_current();
    if (NULL == task) {
        return MCA_PML_CALL(recv(buf, count, dtype, peer, tag, comm, MPI_STATUS_IGNORE));
    }
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = MCA_PML_CALL(irecv(buf, count, dtype, peer, bufpool_task_tag(task, tag), comm, &req));
    return OMPI_SUCCESS == rc ? task_wait_one(task, &req) : rc;
}

int bufpool_wait(ompi_request_t **req)
{
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task) {
        bufpool_task_await(task, req, 1);
    }
    return ompi_request_wait(req, MPI_STATUS_IGNORE);
}

int bufpool_wait_all(size_t n, ompi_request_t **reqs)
{
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task) {
        bufpool_task_await(task, reqs, n);
    }
    return ompi_request_wait_all(n, reqs, MPI_STATUSES_IGNORE);
}

int bufpool_test_all(size_t n, ompi_request_t **reqs, bool *done)
{
    if (NULL != bufpool_task_current()) {
        /* Inside a task the flags only: this task may be what Open MPI's
         * progress is running. */
        for (size_t i = 0; i < n; i++) {
            if (!bufpool_request_done(reqs[i])) {
                *done = false;
                return OMPI_SUCCESS;
            }
        }
        *done = true;
        return ompi_request_wait_all(n, reqs, MPI_STATUSES_IGNORE);
    }
    int completed = 0;
    const int rc = ompi_request_test_all(n, reqs, &completed, MPI_STATUSES_IGNORE);
    *done = 0 != completed;
    return rc;
}

void bufpool_cancel_wait(ompi_request_t **req)
{
    if (MPI_REQUEST_NULL != *req) {
        (void)ompi_request_cancel(*req);
        (void)bufpool_wait(req);
    }
}

int bufpool_sendrecv(const void *sbuf, size_t scount, struct ompi_datatype_t *sdtype, int dst,
                     void *rbuf, size_t rcount, struct ompi_datatype_t *rdtype, int src, int tag,
                     struct ompi_communicator_t *comm)
{
    bufpool_task_t *task = bufpool_task_current();
    ompi_request_t *req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const int ttag = NULL != task ? bufpool_task_tag(task, tag) : tag;
    int rc = MCA_PML_CALL(irecv(rbuf, rcount, rdtype, src, ttag, comm, &req[0]));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL != task) {
        /* Both posted, one suspension for the pair. */
        rc = MCA_PML_CALL(
            isend(sbuf, scount, sdtype, dst, ttag, MCA_PML_BASE_SEND_STANDARD, comm, &req[1]));
        if (OMPI_SUCCESS != rc) {
            bufpool_cancel_wait(&req[0]);
            return rc;
        }
        return bufpool_wait_all(2, req);
    }
    rc = MCA_PML_CALL(send(sbuf, scount, sdtype, dst, tag, MCA_PML_BASE_SEND_STANDARD, comm));
    if (OMPI_SUCCESS != rc) {
        bufpool_cancel_wait(&req[0]);
        return rc;
    }
    return ompi_request_wait(&req[0], MPI_STATUS_IGNORE);
}

/* ---------------------------------------------------------------------- */
/* Words in shared memory. */

/* Reads of the word between two calls of opal_progress: a peer that is
 * already there answers within a few hundred nanoseconds, well inside
 * this; one that is late gets the core back through progress (which
 * yields when Open MPI was told the node is oversubscribed). */
#define WAIT_WORD_SPINS 64

void bufpool_wait_word(const uint64_t *word, uint64_t value)
{
    if (OPAL_LIKELY(__atomic_load_n(word, __ATOMIC_ACQUIRE) >= value)) {
        return;
    }
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task) {
        bufpool_task_await_word(task, word, value);
        return;
    }
    for (unsigned spins = 1; __atomic_load_n(word, __ATOMIC_ACQUIRE) < value; spins++) {
        if (0 == spins % WAIT_WORD_SPINS) {
            opal_progress();
        } else {
            bufpool_cpu_relax();
        }
    }
}

/* ---------------------------------------------------------------------- */
/* User-defined operations. */

typedef struct user_reduce {
    struct ompi_op_t *op;
    const void *in;
    void *inout;
    size_t count;
    struct ompi_datatype_t *dtype;
} user_reduce_t;

static void user_reduce_run(void *arg)
{
    const user_reduce_t *r = arg;
    ompi_op_reduce(r->op, (void *)r->in, r->inout, r->count, r->dtype);
}

void bufpool_reduce_user(struct ompi_op_t *op, const void *in, void *inout, size_t count,
                         struct ompi_datatype_t *dtype)
{
    user_reduce_t r = {.op = op, .in = in, .inout = inout, .count = count, .dtype = dtype};
    bufpool_task_t *task = bufpool_task_current();
    /* A task's stack holds bufpool's and Open MPI's frames only: the
     * application's code (a Fortran automatic array, a C VLA as large as
     * *len) runs where Open MPI would run it, on the calling thread's
     * stack. */
    if (NULL != task) {
        bufpool_task_call_outside(task, user_reduce_run, &r);
    } else {
        user_reduce_run(&r);
    }
}
