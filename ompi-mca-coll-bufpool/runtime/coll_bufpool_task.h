/*
 * Tasks: a function running on a fiber of its own (coll_bufpool_fiber.h)
 * that yields wherever it would block and is resumed by Open MPI's
 * progress, the engine of coll/bufpool's nonblocking and persistent
 * collectives (coll_bufpool_task.c).  The component's request side
 * (coll_bufpool_nb.c) embeds a task in each request and gives it a body:
 * the blocking collective's own algorithm.  What the shared code below it
 * needs of the task it may be running in: the wait primitives
 * (coll_bufpool_wait.c), the request sets (algorithms/coll_bufpool_pipeline.c)
 * and scratch (coll_bufpool_scratch.c keeps a persistent task's buffers in
 * its kept slots).
 *
 * Life of a task: bufpool_task_init once, per operation bufpool_task_start
 * (a stack from the cache, the first slice at once, then progress resumes
 * it until its body returns; the request then completes with the body's
 * rc).
 */
#ifndef MCA_COLL_BUFPOOL_TASK_H
#define MCA_COLL_BUFPOOL_TASK_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"

#include "coll_bufpool_fiber.h"

BEGIN_C_DECLS

/* Scratch buffers a persistent task keeps between starts (an algorithm
 * holds at most a few at once). */
#define BUFPOOL_TASK_SCRATCH_KEPT 4

typedef struct bufpool_task bufpool_task_t;

struct bufpool_task {
    ompi_coll_base_nbc_request_t super; /* the MPI request: first */
    struct bufpool_task *next, *prev;   /* the list of tasks in flight */
    bufpool_fiber_t fiber;
    bufpool_fiber_stack_t stack; /* while running */
    /* What runs on the fiber; it returns the operation's status. */
    int (*body)(bufpool_task_t *task);
    int rc;          /* what body returned */
    int tag_base;    /* the first tag of the task's block (tags go down) */
    bool persistent; /* keeps its scratch from start to start */
    /* Completions so far: each stored with release order by the thread
     * that completes the task (any thread's progress may), read with
     * acquire order by whoever reuses it (bufpool_task_ended). */
    unsigned ends;
    /* A call the task asked its resumer to make on the resumer's own
     * stack (bufpool_task_call_outside), NULL when none. */
    void (*outside_fn)(void *);
    void *outside_arg;
    /* What the task waits for (bufpool_task_await). */
    ompi_request_t **await;
    size_t await_n, await_next;
    /* Or a word to reach a value (bufpool_task_await_word); NULL: none. */
    const uint64_t *await_word;
    uint64_t await_value;
    /* Request arrays of the pipeline's request sets. */
    ompi_request_t **req_cache, **aux_req_cache;
    size_t req_cache_cap, aux_req_cache_cap;
    /* Scratch kept by a persistent task (used: taken in this start). */
    struct {
        void *buf;
        size_t bytes;
        bool used;
    } kept[BUFPOOL_TASK_SCRATCH_KEPT];
};

/* What the component publishes of the tasks (MPI_T, finalize report). */
typedef struct bufpool_task_counters {
    uint64_t tasks_peak;             /* the most in flight at once   */
    uint64_t stacks_mapped;          /* stacks ever mapped           */
    uint64_t progress_registrations; /* progress callback registered */
} bufpool_task_counters_t;

extern bufpool_task_counters_t bufpool_task_counters;

/* At component open (stack_size: coll_bufpool_nb_stack_size; map_one: map
 * a stack now, while the system still gives mappings; tag_range:
 * coll_bufpool_test_nbc_tag_range, 0 for Open MPI's own range) and close
 * (every cached stack unmapped, the progress callback gone). */
void bufpool_tasks_open(size_t stack_size, bool map_one, int tag_range);
void bufpool_tasks_close(void);
/* Whether the progress callback is registered now; the deepest use of a
 * stack so far, bytes to a page. */
bool bufpool_tasks_progress_registered(void);
size_t bufpool_tasks_stack_peak(void);

/* A task's fields for its first operation (body, persistent).  The
 * scratch a persistent task keeps goes back to the pool with
 * bufpool_scratch_drop_kept (coll_bufpool_scratch.h). */
void bufpool_task_init(bufpool_task_t *task, int (*body)(bufpool_task_t *), bool persistent);
/* When the task object itself goes: its request arrays. */
void bufpool_task_destroy(bufpool_task_t *task);

/* Start (or restart) the task's operation: a stack, the first slice now,
 * then progress; the request completes when body returns.  An error before
 * the first slice (no stack) is returned and nothing was posted. */
int bufpool_task_start(bufpool_task_t *task);

/* Before a thread reuses or frees a task whose request it saw complete:
 * what the completing thread wrote is visible here.  Open MPI's wait
 * already orders the two, with fences that ThreadSanitizer does not
 * model; this acquire load pairs with the completion's release store where
 * it can see it (on x86 a plain load, on aarch64 a load-acquire). */
static inline void bufpool_task_ended(const bufpool_task_t *task)
{
    (void)__atomic_load_n(&task->ends, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------------- */
/* Tags.  A task reserves a block of BUFPOOL_TASK_TAGS tags on its
 * communicator (the counter libnbc and every other nonblocking component
 * share), the same block on every rank, which reserve in the same order. */

/* The blocks the persistent requests of one communicator took, ascending:
 * later reservations skip them (coll_bufpool_task.c says why).  Owned by
 * the communicator's module; never shortened. */
typedef struct bufpool_tag_blocks {
    int *base;
    size_t n, cap;
} bufpool_tag_blocks_t;

/* The first tag of a block for a task on comm that no persistent request
 * in *held holds; a persistent task's block is recorded there.  False when
 * memory to record it is short. */
bool bufpool_task_reserve_tags(bufpool_tag_blocks_t *held, struct ompi_communicator_t *comm,
                               bool persistent, int *base);
void bufpool_tag_blocks_free(bufpool_tag_blocks_t *held);

/* The task's tag for one of the algorithms' MCA_COLL_BASE_TAG_* constants:
 * the same offset into the block the task reserved on its communicator.
 * Other values pass unchanged. */
int bufpool_task_tag(const bufpool_task_t *task, int tag);

/* ---------------------------------------------------------------------- */
/* From inside a task. */

/* The task this thread runs now, NULL in a blocking collective.  Not
 * inlined on purpose: a task may resume on another thread
 * (MPI_THREAD_MULTIPLE), so the address of the thread-local variable must
 * be computed afresh at every read, never kept across a yield. */
bufpool_task_t *bufpool_task_current(void);

/* Suspend the task until each of the n requests is complete (no progress
 * is called here: Open MPI's progress resumes it).  The caller then
 * collects them with ompi_request_wait(_all). */
void bufpool_task_await(bufpool_task_t *task, ompi_request_t **reqs, size_t n);

/* Whether req is complete (or inactive), from its flags alone: no
 * progress, which may be what is running the caller's task. */
static inline bool bufpool_request_done(const ompi_request_t *req)
{
    return OMPI_REQUEST_INACTIVE == req->req_state || REQUEST_COMPLETE(req);
}

/* Suspend the task until *word >= value (a sequence number that another
 * process sharing the memory, or another task, advances). */
void bufpool_task_await_word(bufpool_task_t *task, const uint64_t *word, uint64_t value);

/* Run fn(arg) on the stack of the thread that resumes the task, not on the
 * task's own: the task yields, its resumer calls fn and resumes it at once.
 * For code of the application (a user-defined operation), which must run
 * on a stack as large as Open MPI would give it: the caller's, as libnbc
 * runs it. */
void bufpool_task_call_outside(bufpool_task_t *task, void (*fn)(void *), void *arg);

/* The task's own request arrays (blocking collectives use their
 * communicator's, of which one runs at a time; tasks overlap): the main
 * one, or the second (aux) one. */
void bufpool_task_req_arrays(bufpool_task_t *task, bool aux, ompi_request_t ****cache,
                             size_t **cap);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_TASK_H */
