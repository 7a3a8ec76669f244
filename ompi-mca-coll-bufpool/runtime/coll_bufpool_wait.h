/*
 * The point-to-point primitives every bufpool algorithm posts and waits
 * through (coll_bufpool_wait.c), so that one algorithm serves the blocking,
 * nonblocking and persistent forms of a collective.
 *
 * Outside a task (a blocking collective) each does exactly what the
 * algorithms did before: the PML call, the blocking send as a blocking send
 * (so that the PML may send a small message inline), ompi_request_wait.
 * The only added cost is one read of the current task (a thread-local
 * variable, through bufpool_task_current) and a branch.
 *
 * Inside a task (a nonblocking or persistent collective running on its own
 * stack, coll_bufpool_nb.c) a blocking point posts what it has to post
 * without blocking, records the requests it waits for and yields; Open
 * MPI's progress resumes the task once every one of them is complete, and
 * the primitive then collects them with ompi_request_wait(_all), as the
 * blocking code would.  Tags are the algorithms' MCA_COLL_BASE_TAG_*
 * constants, mapped into the task's own block of tags
 * (bufpool_task_tag): every post goes through this file, so every tag site
 * is mapped by construction.
 *
 * No algorithm calls MCA_PML_CALL or ompi_request_wait* itself
 * (test/unit/coll_no_direct_pml.sh checks the sources).
 */
#ifndef MCA_COLL_BUFPOOL_WAIT_H
#define MCA_COLL_BUFPOOL_WAIT_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

/* Nonblocking posts (standard-mode sends). */
int bufpool_isend(const void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                  struct ompi_communicator_t *comm, ompi_request_t **req);
int bufpool_irecv(void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                  struct ompi_communicator_t *comm, ompi_request_t **req);

/* Blocking points. */
int bufpool_send(const void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                 struct ompi_communicator_t *comm);
int bufpool_recv(void *buf, size_t count, struct ompi_datatype_t *dtype, int peer, int tag,
                 struct ompi_communicator_t *comm);
/* Complete and release *req (MPI_REQUEST_NULL: nothing to do). */
int bufpool_wait(ompi_request_t **req);
/* Complete and release n requests; the first error. */
int bufpool_wait_all(size_t n, ompi_request_t **reqs);
/* Whether n requests are complete (*done), without blocking or yielding:
 * where they are, released as bufpool_wait_all does (the first error);
 * where not, outside a task, after one turn of Open MPI's progress, so
 * that an algorithm doing other work between tests moves them along. */
int bufpool_test_all(size_t n, ompi_request_t **reqs, bool *done);
/* Cancel a posted receive (error paths) and complete it. */
void bufpool_cancel_wait(ompi_request_t **req);

/* Send to dst and receive from src at once, both complete on return (a
 * blocking call sends blocking, so that the PML may send a small message
 * inline). */
int bufpool_sendrecv(const void *sbuf, size_t scount, struct ompi_datatype_t *sdtype, int dst,
                     void *rbuf, size_t rcount, struct ompi_datatype_t *rdtype, int src, int tag,
                     struct ompi_communicator_t *comm);

/* Until *word >= value: a sequence number in memory that other processes
 * of the node (or another task of this one) advance.  Outside a task it
 * spins, with Open MPI's progress every few dozen reads (which also yields
 * the core when the node is oversubscribed); in a task it yields and
 * progress resumes it. */
void bufpool_wait_word(const uint64_t *word, uint64_t value);

/* inout = in op inout with a user-defined operation: in a task (a
 * nonblocking or persistent collective), on the stack of the thread that
 * runs it rather than the task's (bufpool_task_call_outside). */
void bufpool_reduce_user(struct ompi_op_t *op, const void *in, void *inout, size_t count,
                         struct ompi_datatype_t *dtype);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_WAIT_H */
