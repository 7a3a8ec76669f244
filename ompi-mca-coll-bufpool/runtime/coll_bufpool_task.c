/*
 * Tasks (see coll_bufpool_task.h): stacks, the list of tasks in flight,
 * Open MPI's progress resuming them, tag blocks, and what a task offers the
 * code that runs on it.
 *
 * A task's body runs on a fiber.  Wherever the algorithm would block, the
 * primitives of coll_bufpool_wait.c post without blocking, record the
 * requests they wait for (bufpool_task_await) and yield; the progress
 * callback registered here (tasks_progress) resumes the task once every
 * one of them is complete.  See docs/collectives.md, "Nonblocking and
 * persistent collectives".
 */
#include "coll_bufpool_task.h"

#include <stdlib.h>
#include <string.h>

#include "bufpool_ompi_compat.h"
#include BUFPOOL_OPAL_MUTEX_H
#include "ompi/errhandler/errcode-internal.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "opal/runtime/opal_progress.h"

/* The tags the algorithms use (MCA_COLL_BASE_TAG_ALLGATHER .. _SCATTERV):
 * a task reserves a block of as many on its communicator. */
#define TAG_FIRST -10 /* MCA_COLL_BASE_TAG_ALLGATHER */
#define TAG_LAST  -26 /* MCA_COLL_BASE_TAG_SCATTERV  */
#define TASK_TAGS (TAG_FIRST - TAG_LAST + 1)
_Static_assert(MCA_COLL_BASE_TAG_ALLGATHER == TAG_FIRST && MCA_COLL_BASE_TAG_SCATTERV == TAG_LAST,
               "the blocking tags moved: adjust TAG_FIRST and TAG_LAST");

/* Stacks kept for reuse: as many as were ever in use at once, up to this
 * many (each holds only the pages its deepest use touched, about 10 KiB,
 * and reserves nb_stack_size + 64 KiB of address space); beyond it a task
 * maps and unmaps its own. */
#define STACKS_CACHED_MAX 256
/* The progress callback unregisters itself after this many consecutive
 * calls that found no task in flight: registering and unregistering costs
 * 30-36 ns a pair here (Open MPI's progress lock and a search of its
 * callback array), which a loop of small MPI_I<coll> + MPI_Wait would pay
 * at every call, while an idle callback costs a load and a branch per
 * opal_progress (within the noise of its 7-11 ns). */
#define IDLE_CALLS_BEFORE_UNREGISTER 1024

bufpool_task_counters_t bufpool_task_counters;

/* State shared by every task of the process. */
static struct {
    opal_mutex_t lock; /* the list in flight, its count, the stacks */
    bool constructed;
    size_t stack_size;
    int tag_range;                      /* 0, or the test's wrap (see tags_reserve_once) */
    bufpool_task_t *head, *tail;        /* tasks in flight */
    int active;                         /* changed under lock, read without */
    bool registered;                    /* tasks_progress is an Open MPI callback */
    uint32_t idle_calls;                /* callback calls in a row with nothing active */
    int32_t progressing;                /* trylock: one thread resumes tasks at a time */
    bufpool_fiber_stack_t *free_stacks; /* cap_stacks of them */
    int nfree_stacks, cap_stacks;
    size_t stack_used_peak; /* deepest use seen on a stack, bytes */
} tasks;

static _Thread_local bufpool_task_t *current_task;

__attribute__((noinline)) bufpool_task_t *bufpool_task_current(void)
{
    return current_task;
}

static int tasks_progress(void);

void bufpool_tasks_open(size_t stack_size, bool map_one, int tag_range)
{
    OBJ_CONSTRUCT(&tasks.lock, opal_mutex_t);
    tasks.constructed = true;
    tasks.stack_size = stack_size;
    tasks.tag_range = tag_range;
    tasks.free_stacks = NULL;
    tasks.nfree_stacks = tasks.cap_stacks = 0;
    /* One stack mapped now, at MPI_Init, kept for reuse: a nonblocking
     * collective then still runs when the system later refuses new
     * mappings (Open MPI 4.1 creates every communicator with an
     * MPI_Iallreduce of the parent, which bufpool serves: without it, one
     * failing mmap made MPI_Comm_split fail in fault_sweep.sh).  Untouched
     * pages cost no memory. */
    if (map_one && NULL != (tasks.free_stacks = malloc(16 * sizeof(*tasks.free_stacks)))) {
        tasks.cap_stacks = 16;
        if (0 == bufpool_fiber_stack_map(&tasks.free_stacks[0], stack_size)) {
            tasks.nfree_stacks = 1;
            (void)__atomic_fetch_add(&bufpool_task_counters.stacks_mapped, 1, __ATOMIC_RELAXED);
        }
    }
}

void bufpool_tasks_close(void)
{
    if (!tasks.constructed) {
        return;
    }
    OPAL_THREAD_LOCK(&tasks.lock);
    while (tasks.nfree_stacks > 0) {
        bufpool_fiber_stack_unmap(&tasks.free_stacks[--tasks.nfree_stacks]);
    }
    free(tasks.free_stacks);
    tasks.free_stacks = NULL;
    tasks.cap_stacks = 0;
    if (tasks.registered) {
        (void)opal_progress_unregister(tasks_progress);
        tasks.registered = false;
    }
    OPAL_THREAD_UNLOCK(&tasks.lock);
    OBJ_DESTRUCT(&tasks.lock);
    tasks.constructed = false;
}

bool bufpool_tasks_progress_registered(void)
{
    return __atomic_load_n(&tasks.registered, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------- */
/* What a task offers the code that runs on it (coll_bufpool_task.h). */

int bufpool_task_tag(const bufpool_task_t *task, int tag)
{
    if (tag > TAG_FIRST || tag < TAG_LAST) {
        return tag;
    }
    return task->tag_base - (TAG_FIRST - tag);
}

/* Every awaited request complete?  Reads completion flags only: no
 * progress (ompi_request_test would call opal_progress, which may be what
 * is running us). */
static bool task_ready(bufpool_task_t *t)
{
    if (NULL != t->await_word) {
        if (__atomic_load_n(t->await_word, __ATOMIC_ACQUIRE) < t->await_value) {
            return false;
        }
        t->await_word = NULL;
    }
    while (t->await_next < t->await_n) {
        if (!bufpool_request_done(t->await[t->await_next])) {
            return false;
        }
        t->await_next++;
    }
    opal_atomic_rmb();
    return true;
}

void bufpool_task_await(bufpool_task_t *task, ompi_request_t **reqs, size_t n)
{
    task->await = reqs;
    task->await_n = n;
    task->await_next = 0;
    while (!task_ready(task)) {
        bufpool_fiber_yield(&task->fiber);
    }
    task->await_n = 0;
}

void bufpool_task_await_word(bufpool_task_t *task, const uint64_t *word, uint64_t value)
{
    task->await_word = word;
    task->await_value = value;
    while (!task_ready(task)) {
        bufpool_fiber_yield(&task->fiber);
    }
}

void bufpool_task_call_outside(bufpool_task_t *task, void (*fn)(void *), void *arg)
{
    task->outside_fn = fn;
    task->outside_arg = arg;
    bufpool_fiber_yield(&task->fiber);
}

void bufpool_task_req_arrays(bufpool_task_t *task, bool aux, ompi_request_t ****cache, size_t **cap)
{
    *cache = aux ? &task->aux_req_cache : &task->req_cache;
    *cap = aux ? &task->aux_req_cache_cap : &task->req_cache_cap;
}

/* ---------------------------------------------------------------------- */
/* Stacks: mapped once, kept for reuse, so that the steady state makes no
 * system call. */

static int stack_get(bufpool_fiber_stack_t *stack)
{
    OPAL_THREAD_LOCK(&tasks.lock);
    if (tasks.nfree_stacks > 0) {
        *stack = tasks.free_stacks[--tasks.nfree_stacks];
        OPAL_THREAD_UNLOCK(&tasks.lock);
        return OMPI_SUCCESS;
    }
    OPAL_THREAD_UNLOCK(&tasks.lock);
    if (0 != bufpool_fiber_stack_map(stack, tasks.stack_size)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    (void)__atomic_fetch_add(&bufpool_task_counters.stacks_mapped, 1, __ATOMIC_RELAXED);
    return OMPI_SUCCESS;
}

static void stack_put(bufpool_fiber_stack_t *stack)
{
    OPAL_THREAD_LOCK(&tasks.lock);
    if (tasks.nfree_stacks == tasks.cap_stacks && tasks.cap_stacks < STACKS_CACHED_MAX) {
        /* More were in use at once than the cache holds: keep them all
         * from now on, so that a steady state maps none. */
        int cap = tasks.cap_stacks > 0 ? 2 * tasks.cap_stacks : 16;
        cap = cap < STACKS_CACHED_MAX ? cap : STACKS_CACHED_MAX;
        bufpool_fiber_stack_t *more = realloc(tasks.free_stacks, (size_t)cap * sizeof(*more));
        if (NULL != more) {
            tasks.free_stacks = more;
            tasks.cap_stacks = cap;
        }
    }
    if (tasks.nfree_stacks < tasks.cap_stacks) {
        tasks.free_stacks[tasks.nfree_stacks++] = *stack;
        stack->map = NULL;
    }
    OPAL_THREAD_UNLOCK(&tasks.lock);
    if (NULL != stack->map) {
        const size_t used = bufpool_fiber_stack_used(stack);
        OPAL_THREAD_LOCK(&tasks.lock);
        tasks.stack_used_peak = used > tasks.stack_used_peak ? used : tasks.stack_used_peak;
        OPAL_THREAD_UNLOCK(&tasks.lock);
        bufpool_fiber_stack_unmap(stack);
    }
    memset(stack, 0, sizeof(*stack));
}

size_t bufpool_tasks_stack_peak(void)
{
    if (!tasks.constructed) {
        return tasks.stack_used_peak;
    }
    OPAL_THREAD_LOCK(&tasks.lock);
    size_t peak = tasks.stack_used_peak;
    for (int i = 0; i < tasks.nfree_stacks; i++) {
        const size_t used = bufpool_fiber_stack_used(&tasks.free_stacks[i]);
        peak = used > peak ? used : peak;
    }
    OPAL_THREAD_UNLOCK(&tasks.lock);
    return peak;
}

/* ---------------------------------------------------------------------- */
/* Tags.  The counter (ompi_coll_base_nbc_reserve_tags) wraps after about
 * 2^30 tags, some 63 million of bufpool's tasks: a long job gets there.  A
 * persistent request keeps its block until freed, and MPI lets each rank
 * start persistent collectives in its own order relative to the others, so
 * after a wrap a new block landing on one in use would let two operations
 * in flight match each other's messages.  Every block a persistent request
 * ever took on the communicator is therefore recorded and skipped by later
 * reservations: the same list on every rank, since persistent requests are
 * created in the same order everywhere (their frees are local: the list is
 * never shortened).  MPI orders a communicator's collective calls, so the
 * list needs no lock.  The tags libnbc reserves one at a time are libnbc's
 * to place. */

/* Whether block base overlaps a recorded one. */
static bool tags_taken(const bufpool_tag_blocks_t *held, int base)
{
    const size_t n = held->n;
    if (0 == n || base + TASK_TAGS <= held->base[0] || base >= held->base[n - 1] + TASK_TAGS) {
        return false; /* below or above all of them: the common case */
    }
    size_t lo = 0, hi = n; /* the first recorded block >= base - TASK_TAGS + 1 */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (held->base[mid] < base - TASK_TAGS + 1) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && held->base[lo] < base + TASK_TAGS;
}

/* Record a block (ascending).  False when memory is short. */
static bool tags_record(bufpool_tag_blocks_t *held, int base)
{
    if (held->n == held->cap) {
        const size_t cap = held->cap > 0 ? 2 * held->cap : 16;
        int *more = realloc(held->base, cap * sizeof(*more));
        if (NULL == more) {
            return false;
        }
        held->base = more;
        held->cap = cap;
    }
    size_t at = held->n;
    while (at > 0 && held->base[at - 1] > base) {
        at--;
    }
    memmove(held->base + at + 1, held->base + at, (held->n - at) * sizeof(*held->base));
    held->base[at] = base;
    held->n++;
    return true;
}

/* One reservation on comm's counter: Open MPI's, or under
 * coll_bufpool_test_nbc_tag_range the same one wrapping after that many
 * tags (tests reach the wrap in seconds). */
static int tags_reserve_once(struct ompi_communicator_t *comm)
{
    if (0 == tasks.tag_range) {
        return ompi_coll_base_nbc_reserve_tags(comm, TASK_TAGS);
    }
    const int32_t end = MCA_COLL_BASE_TAG_NONBLOCKING_BASE - tasks.tag_range;
    int32_t tag, old;
    do {
        tag = old = comm->c_nbc_tag;
        if (tag - TASK_TAGS < end) {
            tag = MCA_COLL_BASE_TAG_NONBLOCKING_BASE;
        }
    } while (!OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_32(&comm->c_nbc_tag, &old, tag - TASK_TAGS));
    return tag;
}

bool bufpool_task_reserve_tags(bufpool_tag_blocks_t *held, struct ompi_communicator_t *comm,
                               bool persistent, int *base)
{
    /* Bounded: the recorded blocks cover at most their number of blocks. */
    int b = tags_reserve_once(comm);
    for (size_t tries = 0; tries <= held->n && tags_taken(held, b); tries++) {
        b = tags_reserve_once(comm);
    }
    *base = b;
    return !persistent || tags_record(held, b);
}

void bufpool_tag_blocks_free(bufpool_tag_blocks_t *held)
{
    free(held->base);
    held->base = NULL;
    held->n = held->cap = 0;
}

/* ---------------------------------------------------------------------- */
/* Progress. */

static void count_peak(uint64_t *peak, uint64_t now)
{
    uint64_t seen = __atomic_load_n(peak, __ATOMIC_RELAXED);
    while (now > seen && !__atomic_compare_exchange_n(peak, &seen, now, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {
    }
}

/* Queue a task that yielded; the progress callback is registered while
 * anything is queued. */
static void active_add(bufpool_task_t *t)
{
    OPAL_THREAD_LOCK(&tasks.lock);
    t->next = NULL;
    t->prev = tasks.tail;
    if (NULL != tasks.tail) {
        tasks.tail->next = t;
    } else {
        tasks.head = t;
    }
    tasks.tail = t;
    count_peak(&bufpool_task_counters.tasks_peak,
               (uint64_t)__atomic_add_fetch(&tasks.active, 1, __ATOMIC_RELAXED));
    __atomic_store_n(&tasks.idle_calls, 0, __ATOMIC_RELAXED);
    if (!tasks.registered) {
        tasks.registered = OPAL_SUCCESS == opal_progress_register(tasks_progress);
        (void)__atomic_fetch_add(&bufpool_task_counters.progress_registrations, 1,
                                 __ATOMIC_RELAXED);
    }
    OPAL_THREAD_UNLOCK(&tasks.lock);
}

/* Under tasks.lock. */
static void active_remove(bufpool_task_t *t)
{
    if (NULL != t->prev) {
        t->prev->next = t->next;
    } else {
        tasks.head = t->next;
    }
    if (NULL != t->next) {
        t->next->prev = t->prev;
    } else {
        tasks.tail = t->prev;
    }
    t->next = t->prev = NULL;
    (void)__atomic_sub_fetch(&tasks.active, 1, __ATOMIC_RELAXED);
}

/* The callback found nothing to do: after enough such calls in a row it
 * takes itself off Open MPI's progress (the next task puts it back), so
 * that blocking collectives pay nothing once nonblocking ones are over. */
static void progress_idle(void)
{
    if (__atomic_add_fetch(&tasks.idle_calls, 1, __ATOMIC_RELAXED) < IDLE_CALLS_BEFORE_UNREGISTER) {
        return;
    }
    OPAL_THREAD_LOCK(&tasks.lock);
    if (0 == tasks.active && tasks.registered) {
        (void)opal_progress_unregister(tasks_progress);
        tasks.registered = false;
    }
    __atomic_store_n(&tasks.idle_calls, 0, __ATOMIC_RELAXED);
    OPAL_THREAD_UNLOCK(&tasks.lock);
}

/* Run the task until its next wait or its end, on this thread; the calls
 * it asks to make outside its stack (user-defined operations) run here, on
 * this thread's stack, outside the task. */
static void task_slice(bufpool_task_t *t)
{
    bufpool_task_t *outer = current_task;
    for (;;) {
        current_task = t;
        bufpool_fiber_resume(&t->fiber);
        current_task = outer;
        void (*fn)(void *) = t->outside_fn;
        if (NULL == fn) {
            return;
        }
        t->outside_fn = NULL;
        fn(t->outside_arg);
    }
}

/* The body ended: the stack goes back, the request completes (after which
 * the task belongs to whoever frees the request). */
static void task_complete(bufpool_task_t *t)
{
    stack_put(&t->stack);
    ompi_request_t *req = &t->super.super;
    req->req_status.MPI_ERROR =
        OMPI_SUCCESS == t->rc ? MPI_SUCCESS : ompi_errcode_get_mpi_code(t->rc);
    /* Only this thread writes it now (bufpool_task_ended reads it). */
    __atomic_store_n(&t->ends, t->ends + 1, __ATOMIC_RELEASE);
    ompi_request_complete(req, true);
}

static int tasks_progress(void)
{
    int completed = 0;
    /* Nothing in flight: one load (the common case once idle). */
    if (0 == __atomic_load_n(&tasks.active, __ATOMIC_RELAXED)) {
        progress_idle();
        return 0;
    }
    /* From inside a task (a PML call it made may progress): the task is
     * running already, and so is whoever resumed it. */
    if (NULL != bufpool_task_current()) {
        return 0;
    }
    /* One thread at a time resumes tasks: a trylock when threads may call
     * progress at once, a plain flag otherwise (the atomic exchange was
     * most of this callback's cost while a task waits, measured with perf
     * on a 2-rank MPI_Ibcast loop). */
    const bool threads = opal_using_threads();
    if (threads ? 0 != __atomic_exchange_n(&tasks.progressing, 1, __ATOMIC_ACQUIRE)
                : 0 != tasks.progressing) {
        return 0; /* another thread (or an outer call) resumes them */
    }
    if (!threads) {
        /* (With threads the exchange took it: a plain store here would
         * race with another thread's exchange.) */
        tasks.progressing = 1;
    }
    OPAL_THREAD_LOCK(&tasks.lock);
    for (bufpool_task_t *t = tasks.head, *next; NULL != t; t = next) {
        if (!task_ready(t)) {
            next = t->next;
            continue;
        }
        /* Others may append tasks while this one runs: only this thread
         * removes any. */
        OPAL_THREAD_UNLOCK(&tasks.lock);
        task_slice(t);
        OPAL_THREAD_LOCK(&tasks.lock);
        next = t->next;
        if (t->fiber.done) {
            active_remove(t);
            OPAL_THREAD_UNLOCK(&tasks.lock);
            task_complete(t);
            completed++;
            OPAL_THREAD_LOCK(&tasks.lock);
        }
    }
    OPAL_THREAD_UNLOCK(&tasks.lock);
    if (threads) {
        __atomic_store_n(&tasks.progressing, 0, __ATOMIC_RELEASE);
    } else {
        tasks.progressing = 0;
    }
    return completed;
}

/* ---------------------------------------------------------------------- */
/* A task's life. */

void bufpool_task_init(bufpool_task_t *task, int (*body)(bufpool_task_t *), bool persistent)
{
    task->next = task->prev = NULL;
    memset(&task->stack, 0, sizeof(task->stack));
    task->body = body;
    task->rc = OMPI_SUCCESS;
    task->ends = 0;
    task->persistent = persistent;
    task->outside_fn = NULL;
    task->outside_arg = NULL;
    task->await = NULL;
    task->await_n = task->await_next = 0;
    task->await_word = NULL;
    memset(task->kept, 0, sizeof(task->kept));
}

void bufpool_task_destroy(bufpool_task_t *task)
{
    free(task->req_cache);
    free(task->aux_req_cache);
    task->req_cache = task->aux_req_cache = NULL;
    task->req_cache_cap = task->aux_req_cache_cap = 0;
}

static void task_main(void *arg)
{
    bufpool_task_t *t = arg;
    t->rc = t->body(t);
}

int bufpool_task_start(bufpool_task_t *t)
{
    ompi_request_t *req = &t->super.super;
    bufpool_task_ended(t); /* a persistent task's last completion */
    int rc = stack_get(&t->stack);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    req->req_status.MPI_SOURCE = MPI_ANY_SOURCE;
    req->req_status.MPI_TAG = MPI_ANY_TAG;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_status._cancelled = 0;
    req->req_complete = REQUEST_PENDING;
    req->req_state = OMPI_REQUEST_ACTIVE;
    t->rc = OMPI_SUCCESS;
    t->await_n = 0;
    t->await_word = NULL;
    bufpool_fiber_init(&t->fiber, &t->stack, task_main, t);
    task_slice(t);
    if (t->fiber.done) {
        task_complete(t);
    } else {
        active_add(t);
    }
    return OMPI_SUCCESS;
}
