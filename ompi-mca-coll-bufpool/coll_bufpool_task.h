/*
 * Tasks: a nonblocking or persistent collective running the blocking
 * algorithm on a fiber of its own (coll_bufpool_nb.c).  What the shared
 * code needs to know about the task it may be running in: the wait
 * primitives (coll_bufpool_wait.c), the request sets
 * (coll_bufpool_pipeline.c) and scratch (coll_bufpool_scratch.c).
 */
#ifndef MCA_COLL_BUFPOOL_TASK_H
#define MCA_COLL_BUFPOOL_TASK_H

#include "coll_bufpool.h"

#include <stdbool.h>
#include <stddef.h>

#include "ompi/request/request.h"

BEGIN_C_DECLS

typedef struct bufpool_task bufpool_task_t;

/* The task this thread runs now, NULL in a blocking collective.  Not
 * inlined on purpose: a task may resume on another thread
 * (MPI_THREAD_MULTIPLE), so the address of the thread-local variable must
 * be computed afresh at every read, never kept across a yield. */
bufpool_task_t *bufpool_task_current(void);

/* The task's tag for one of the algorithms' MCA_COLL_BASE_TAG_* constants:
 * the same offset into the block the task reserved on its communicator
 * (ompi_coll_base_nbc_reserve_tags).  Other values pass unchanged. */
int bufpool_task_tag(const bufpool_task_t *task, int tag);

/* Suspend the task until each of the n requests is complete (no progress
 * is called here: Open MPI's progress resumes it).  The caller then
 * collects them with ompi_request_wait(_all). */
void bufpool_task_await(bufpool_task_t *task, ompi_request_t **reqs, size_t n);

/* The task's own request arrays (the module's serve blocking collectives,
 * of which one communicator runs one at a time; tasks overlap): the main
 * one, or the second (aux) one. */
void bufpool_task_req_arrays(bufpool_task_t *task, bool aux, ompi_request_t ****cache,
                             size_t **cap);

/* Run fn(arg) on the stack of the thread that resumes the task, not on the
 * task's own: the task yields, its resumer calls fn and resumes it at once.
 * For code of the application (a user-defined operation), which must run
 * on a stack as large as Open MPI would give it: the caller's, as libnbc
 * runs it. */
void bufpool_task_call_outside(bufpool_task_t *task, void (*fn)(void *), void *arg);

/* Scratch kept by a persistent task between its starts: a buffer put back
 * stays with the task, a later get of at most its size takes it again.
 * bufpool_task_scratch_get returns NULL when the task keeps nothing that
 * fits (the caller then takes a buffer from the pool, and its put will be
 * kept); bufpool_task_scratch_put returns false when the task does not
 * keep buf (the caller then returns it to the pool). */
void *bufpool_task_scratch_get(bufpool_task_t *task, size_t bytes);
bool bufpool_task_scratch_put(bufpool_task_t *task, void *buf, size_t bytes);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_TASK_H */
