/*
 * coll/bufpool's nonblocking and persistent collectives.
 *
 * A nonblocking or persistent collective is a task: the blocking
 * collective's own algorithm (bufpool_run, the same plan from the same
 * decision) running on a fiber, a stack of its own (coll_bufpool_fiber.h).
 * Wherever the algorithm would block, the primitives of coll_bufpool_wait.c
 * post without blocking, record the requests they wait for
 * (bufpool_task_await) and yield; Open MPI's progress (bufpool_nb_progress,
 * registered while tasks are in flight) resumes the task once every one of
 * them is complete.  So the three forms give the same bits, cut messages
 * alike and hold the same scratch, with no second implementation of any
 * algorithm.
 *
 * Life of a request (ompi_coll_base_nbc_request_t, so that Open MPI's
 * retain of user operations and datatypes works on it):
 *   MPI_I<coll>     decide (nb_call: the size map of the form, then the
 *                   blocking entry path's plan); hand back to the previous
 *                   module (libnbc),
 *                   or reserve a block of tags on the communicator, take a
 *                   task and a stack, run the first slice at once (the
 *                   first transfers are posted before the call returns),
 *                   and queue the task if it did not finish;
 *   progress        resumes every task whose awaited requests are all
 *                   complete, each until its next wait or its end;
 *   end             stack back to the cache, status, ompi_request_complete;
 *   MPI_Wait..      free: communicator, datatypes and operation released,
 *                   the task back to the cache.
 *   MPI_<coll>_init decide and reserve tags once; the request is inactive;
 *   MPI_Start       as MPI_I<coll>'s start, with the same tags and plan;
 *                   the task keeps its scratch between starts;
 *   MPI_Request_free  scratch back to the pool; an active request is an
 *                   error (MPI_ERR_REQUEST), as libnbc answers.
 * See docs/collectives.md, "Nonblocking and persistent collectives".
 */
#include "coll_bufpool_nb.h"
#include "coll_bufpool_fiber.h"
#include "coll_bufpool_run.h"
#include "coll_bufpool_task.h"

#include <stdio.h>
#include <string.h>

#include "ompi/errhandler/errcode-internal.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#define COMPONENT (&mca_coll_bufpool_component)

/* The tags the algorithms use (MCA_COLL_BASE_TAG_ALLGATHER .. _SCATTERV):
 * a task reserves a block of as many on its communicator. */
#define TAG_FIRST -10 /* MCA_COLL_BASE_TAG_ALLGATHER */
#define TAG_LAST  -26 /* MCA_COLL_BASE_TAG_SCATTERV  */
#define TASK_TAGS (TAG_FIRST - TAG_LAST + 1)
_Static_assert(MCA_COLL_BASE_TAG_ALLGATHER == TAG_FIRST && MCA_COLL_BASE_TAG_SCATTERV == TAG_LAST,
               "the blocking tags moved: adjust TAG_FIRST and TAG_LAST");

/* Scratch buffers a persistent task keeps between starts (an algorithm
 * holds at most a few at once). */
#define TASK_SCRATCH_KEPT 4
/* Tasks kept for reuse once their operation is over (more in flight at
 * once are made and, at the end, released). */
#define TASKS_CACHED 64
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

/* The forms a task serves, numbered as the rules and the counters number
 * them (BUFPOOL_FORM_*, coll_bufpool_rules.h). */
typedef int nb_form_t;
#define FORM_NONBLOCKING BUFPOOL_FORM_NONBLOCKING
#define FORM_PERSISTENT  BUFPOOL_FORM_PERSISTENT

struct bufpool_task {
    ompi_coll_base_nbc_request_t super; /* the MPI request: first */
    struct bufpool_task *next, *prev;   /* the active list, the cache */
    struct bufpool_task *pnext, *pprev; /* nb.persistent (persistent only) */
    bufpool_fiber_t fiber;
    bufpool_fiber_stack_t stack; /* while running */
    bufpool_coll_id_t id;
    nb_form_t form;
    bufpool_args_t args;
    bufpool_call_t call;
    bufpool_plan_t plan;
    struct ompi_communicator_t *comm;
    mca_coll_bufpool_module_t *module;
    int tag_base; /* the first tag of the task's block (tags go down) */
    int rc;       /* what the algorithm returned */
    /* Retained for the task's life: non-predefined datatypes, a user op. */
    struct ompi_datatype_t *kept_types[3];
    struct ompi_op_t *kept_op;
    /* A call the task asked its resumer to make on the resumer's own
     * stack (bufpool_task_call_outside), NULL when none. */
    void (*outside_fn)(void *);
    void *outside_arg;
    /* What the task waits for (bufpool_task_await). */
    ompi_request_t **await;
    size_t await_n, await_next;
    /* Request arrays of the pipeline's request sets. */
    ompi_request_t **req_cache, **aux_req_cache;
    size_t req_cache_cap, aux_req_cache_cap;
    /* Scratch kept by a persistent task (used: taken in this start). */
    struct {
        void *buf;
        size_t bytes;
        bool used;
    } kept[TASK_SCRATCH_KEPT];
};

OBJ_CLASS_DECLARATION(bufpool_task_t);

/* ---------------------------------------------------------------------- */
/* State shared by every task of the process. */

static struct {
    opal_mutex_t lock; /* the active list, its count, the caches */
    bool constructed;
    bufpool_task_t *head, *tail; /* tasks in flight */
    int active;                  /* changed under lock, read without */
    bool registered;             /* bufpool_nb_progress is an Open MPI callback */
    uint32_t idle_calls;         /* callback calls in a row with nothing active */
    int32_t progressing;         /* trylock: one thread resumes tasks at a time */
    bufpool_task_t *free_tasks;  /* through next */
    int nfree_tasks;
    bufpool_fiber_stack_t *free_stacks; /* cap_stacks of them */
    int nfree_stacks, cap_stacks;
    /* Persistent requests not yet freed (through pnext, pprev), released
     * at MPI_Finalize if the application leaves them (finalize_hook). */
    bufpool_task_t *persistent;
    bool finalize_hooked;
    size_t stack_used_peak; /* deepest use seen on a stack, bytes */
} nb;

static _Thread_local bufpool_task_t *current_task;

__attribute__((noinline)) bufpool_task_t *bufpool_task_current(void)
{
    return current_task;
}

void bufpool_nb_open(void)
{
    OBJ_CONSTRUCT(&nb.lock, opal_mutex_t);
    nb.constructed = true;
    /* One stack mapped now, at MPI_Init, kept for reuse: a nonblocking
     * collective then still runs when the system later refuses new
     * mappings (Open MPI 4.1 creates every communicator with an
     * MPI_Iallreduce of the parent, which bufpool serves: without it, one
     * failing mmap made MPI_Comm_split fail in fault_sweep.sh).  Untouched
     * pages cost no memory. */
    nb.free_stacks = NULL;
    nb.nfree_stacks = nb.cap_stacks = 0;
    nb.persistent = NULL;
    nb.finalize_hooked = false;
    if ((COMPONENT->nonblocking || COMPONENT->persistent) &&
        NULL != (nb.free_stacks = malloc(16 * sizeof(*nb.free_stacks)))) {
        nb.cap_stacks = 16;
        if (0 == bufpool_fiber_stack_map(&nb.free_stacks[0], COMPONENT->nb_stack_size)) {
            nb.nfree_stacks = 1;
            (void)__atomic_fetch_add(&COMPONENT->nb_stacks_mapped, 1, __ATOMIC_RELAXED);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* The task side (coll_bufpool_task.h). */

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
    while (t->await_next < t->await_n) {
        ompi_request_t *req = t->await[t->await_next];
        if (OMPI_REQUEST_INACTIVE != req->req_state && !REQUEST_COMPLETE(req)) {
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

void *bufpool_task_scratch_get(bufpool_task_t *task, size_t bytes)
{
    if (FORM_PERSISTENT != task->form) {
        return NULL;
    }
    for (int i = 0; i < TASK_SCRATCH_KEPT; i++) {
        if (NULL != task->kept[i].buf && !task->kept[i].used && task->kept[i].bytes >= bytes) {
            task->kept[i].used = true;
            return task->kept[i].buf;
        }
    }
    return NULL;
}

bool bufpool_task_scratch_put(bufpool_task_t *task, void *buf, size_t bytes)
{
    if (FORM_PERSISTENT != task->form) {
        return false;
    }
    int empty = -1;
    for (int i = 0; i < TASK_SCRATCH_KEPT; i++) {
        if (buf == task->kept[i].buf) {
            task->kept[i].used = false;
            return true;
        }
        if (NULL == task->kept[i].buf && empty < 0) {
            empty = i;
        }
    }
    if (empty < 0) {
        return false;
    }
    /* A buffer from the pool, kept from now on (still counted in use). */
    task->kept[empty].buf = buf;
    task->kept[empty].bytes = bytes;
    task->kept[empty].used = false;
    return true;
}

/* ---------------------------------------------------------------------- */
/* Stacks: mapped once, kept for reuse, so that the steady state makes no
 * system call. */

static int stack_get(bufpool_fiber_stack_t *stack)
{
    OPAL_THREAD_LOCK(&nb.lock);
    if (nb.nfree_stacks > 0) {
        *stack = nb.free_stacks[--nb.nfree_stacks];
        OPAL_THREAD_UNLOCK(&nb.lock);
        return OMPI_SUCCESS;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    if (0 != bufpool_fiber_stack_map(stack, COMPONENT->nb_stack_size)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    (void)__atomic_fetch_add(&COMPONENT->nb_stacks_mapped, 1, __ATOMIC_RELAXED);
    return OMPI_SUCCESS;
}

static void stack_put(bufpool_fiber_stack_t *stack)
{
    OPAL_THREAD_LOCK(&nb.lock);
    if (nb.nfree_stacks == nb.cap_stacks && nb.cap_stacks < STACKS_CACHED_MAX) {
        /* More were in use at once than the cache holds: keep them all
         * from now on, so that a steady state maps none. */
        int cap = nb.cap_stacks > 0 ? 2 * nb.cap_stacks : 16;
        cap = cap < STACKS_CACHED_MAX ? cap : STACKS_CACHED_MAX;
        bufpool_fiber_stack_t *more = realloc(nb.free_stacks, (size_t)cap * sizeof(*more));
        if (NULL != more) {
            nb.free_stacks = more;
            nb.cap_stacks = cap;
        }
    }
    if (nb.nfree_stacks < nb.cap_stacks) {
        nb.free_stacks[nb.nfree_stacks++] = *stack;
        stack->map = NULL;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    if (NULL != stack->map) {
        const size_t used = bufpool_fiber_stack_used(stack);
        OPAL_THREAD_LOCK(&nb.lock);
        nb.stack_used_peak = used > nb.stack_used_peak ? used : nb.stack_used_peak;
        OPAL_THREAD_UNLOCK(&nb.lock);
        bufpool_fiber_stack_unmap(stack);
    }
    memset(stack, 0, sizeof(*stack));
}

/* Deepest use of any stack so far (the cached ones measured now). */
static size_t stacks_used_peak(void)
{
    OPAL_THREAD_LOCK(&nb.lock);
    size_t peak = nb.stack_used_peak;
    for (int i = 0; i < nb.nfree_stacks; i++) {
        const size_t used = bufpool_fiber_stack_used(&nb.free_stacks[i]);
        peak = used > peak ? used : peak;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    return peak;
}

/* ---------------------------------------------------------------------- */
/* Tags.  A task reserves a block of TASK_TAGS tags on its communicator
 * (ompi_coll_base_nbc_reserve_tags, the counter libnbc and every other
 * nonblocking component share; every rank reserves in the same order, so
 * every rank gets the same block).  The counter wraps after about 2^30
 * tags, some 63 million of bufpool's tasks: a long job gets there.  A
 * persistent request keeps its block until freed, so after a wrap a new
 * block could land on one in use, and two operations in flight at once
 * would match each other's messages.  Every block a persistent request of
 * bufpool ever took on the communicator is therefore recorded
 * (module->persist_tags) and skipped by later reservations: the same list
 * on every rank, since persistent requests are created in the same order
 * everywhere (their frees are local: the list is never shortened).  The
 * tags libnbc reserves one at a time are libnbc's to place. */

/* Whether block base overlaps a recorded persistent block. */
static bool tags_taken(const mca_coll_bufpool_module_t *module, int base)
{
    const size_t n = module->persist_tags_n;
    if (0 == n || base + TASK_TAGS <= module->persist_tags[0] ||
        base >= module->persist_tags[n - 1] + TASK_TAGS) {
        return false; /* below or above all of them: the common case */
    }
    size_t lo = 0, hi = n; /* the first recorded block >= base - TASK_TAGS + 1 */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (module->persist_tags[mid] < base - TASK_TAGS + 1) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && module->persist_tags[lo] < base + TASK_TAGS;
}

/* Record a persistent request's block (ascending).  False when memory is
 * short: the caller then fails the initialization on this rank. */
static bool tags_record(mca_coll_bufpool_module_t *module, int base)
{
    if (module->persist_tags_n == module->persist_tags_cap) {
        const size_t cap = module->persist_tags_cap > 0 ? 2 * module->persist_tags_cap : 16;
        int *more = realloc(module->persist_tags, cap * sizeof(*more));
        if (NULL == more) {
            return false;
        }
        module->persist_tags = more;
        module->persist_tags_cap = cap;
    }
    size_t at = module->persist_tags_n;
    while (at > 0 && module->persist_tags[at - 1] > base) {
        at--;
    }
    memmove(module->persist_tags + at + 1, module->persist_tags + at,
            (module->persist_tags_n - at) * sizeof(*module->persist_tags));
    module->persist_tags[at] = base;
    module->persist_tags_n++;
    return true;
}

/* One reservation on comm's counter: Open MPI's, or under
 * coll_bufpool_test_nbc_tag_range the same one wrapping after that many
 * tags (tests reach the wrap in seconds). */
static int tags_reserve_once(struct ompi_communicator_t *comm)
{
    const int range = COMPONENT->test_nbc_tag_range;
    if (0 == range) {
        return ompi_coll_base_nbc_reserve_tags(comm, TASK_TAGS);
    }
    const int32_t end = MCA_COLL_BASE_TAG_NONBLOCKING_BASE - range;
    int32_t tag, old;
    do {
        tag = old = comm->c_nbc_tag;
        if (tag - TASK_TAGS < end) {
            tag = MCA_COLL_BASE_TAG_NONBLOCKING_BASE;
        }
    } while (!OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_32(&comm->c_nbc_tag, &old, tag - TASK_TAGS));
    return tag;
}

/* A task's block: the next one no persistent request of bufpool holds.
 * Bounded: the recorded blocks cover at most their number of blocks. */
static int tags_reserve(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm)
{
    int base = tags_reserve_once(comm);
    for (size_t tries = 0; tries <= module->persist_tags_n && tags_taken(module, base); tries++) {
        base = tags_reserve_once(comm);
    }
    return base;
}

/* ---------------------------------------------------------------------- */
/* Persistent requests the application never frees are released at
 * MPI_Finalize: MPI_COMM_SELF's attributes are deleted first thing there
 * (MPI, "Allowing User Functions at Process Termination"), while the
 * communicators they retain still exist. */

static void persistent_link(bufpool_task_t *t)
{
    OPAL_THREAD_LOCK(&nb.lock);
    t->pprev = NULL;
    t->pnext = nb.persistent;
    if (NULL != nb.persistent) {
        nb.persistent->pprev = t;
    }
    nb.persistent = t;
    OPAL_THREAD_UNLOCK(&nb.lock);
}

/* Under nb.lock. */
static void persistent_unlink(bufpool_task_t *t)
{
    if (NULL != t->pprev) {
        t->pprev->pnext = t->pnext;
    } else if (nb.persistent == t) {
        nb.persistent = t->pnext;
    }
    if (NULL != t->pnext) {
        t->pnext->pprev = t->pprev;
    }
    t->pnext = t->pprev = NULL;
}

static void task_release_kept(bufpool_task_t *t);

static int finalize_hook(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)value, (void)extra;
    /* The keyval's last use: freed now, or Open MPI keeps it to the end. */
    (void)PMPI_Comm_free_keyval(&keyval);
    OPAL_THREAD_LOCK(&nb.lock);
    bufpool_task_t *t = nb.persistent, *next;
    nb.persistent = NULL;
    OPAL_THREAD_UNLOCK(&nb.lock);
    for (; NULL != t; t = next) {
        next = t->pnext;
        t->pnext = t->pprev = NULL;
        /* An active one (started, not completed) is the application's
         * error: it is left as it is. */
        if (REQUEST_COMPLETE(&t->super.super)) {
            task_release_kept(t);
            OMPI_REQUEST_FINI(&t->super.super);
            OBJ_RELEASE(t);
        }
    }
    return MPI_SUCCESS;
}

/* Once, at the first persistent request: the hook above. */
static void finalize_hook_once(void)
{
    OPAL_THREAD_LOCK(&nb.lock);
    const bool hooked = nb.finalize_hooked;
    nb.finalize_hooked = true;
    OPAL_THREAD_UNLOCK(&nb.lock);
    int keyval;
    if (!hooked && (MPI_SUCCESS != PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_hook,
                                                           &keyval, NULL) ||
                    MPI_SUCCESS != PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL))) {
        opal_output_verbose(1, ompi_coll_base_framework.framework_output,
                            "coll:bufpool: no MPI_Finalize hook: persistent requests not freed "
                            "by the application stay allocated at exit");
    }
}

/* ---------------------------------------------------------------------- */
/* Progress. */

static int bufpool_nb_progress(void);

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
    OPAL_THREAD_LOCK(&nb.lock);
    t->next = NULL;
    t->prev = nb.tail;
    if (NULL != nb.tail) {
        nb.tail->next = t;
    } else {
        nb.head = t;
    }
    nb.tail = t;
    count_peak(&COMPONENT->nb_tasks_peak,
               (uint64_t)__atomic_add_fetch(&nb.active, 1, __ATOMIC_RELAXED));
    __atomic_store_n(&nb.idle_calls, 0, __ATOMIC_RELAXED);
    if (!nb.registered) {
        nb.registered = OPAL_SUCCESS == opal_progress_register(bufpool_nb_progress);
        (void)__atomic_fetch_add(&COMPONENT->nb_progress_registrations, 1, __ATOMIC_RELAXED);
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
}

/* Under nb.lock. */
static void active_remove(bufpool_task_t *t)
{
    if (NULL != t->prev) {
        t->prev->next = t->next;
    } else {
        nb.head = t->next;
    }
    if (NULL != t->next) {
        t->next->prev = t->prev;
    } else {
        nb.tail = t->prev;
    }
    t->next = t->prev = NULL;
    (void)__atomic_sub_fetch(&nb.active, 1, __ATOMIC_RELAXED);
}

/* The callback found nothing to do: after enough such calls in a row it
 * takes itself off Open MPI's progress (the next task puts it back), so
 * that blocking collectives pay nothing once nonblocking ones are over. */
static void progress_idle(void)
{
    if (__atomic_add_fetch(&nb.idle_calls, 1, __ATOMIC_RELAXED) < IDLE_CALLS_BEFORE_UNREGISTER) {
        return;
    }
    OPAL_THREAD_LOCK(&nb.lock);
    if (0 == nb.active && nb.registered) {
        (void)opal_progress_unregister(bufpool_nb_progress);
        nb.registered = false;
    }
    __atomic_store_n(&nb.idle_calls, 0, __ATOMIC_RELAXED);
    OPAL_THREAD_UNLOCK(&nb.lock);
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

/* The algorithm ended: the stack goes back, the request completes (after
 * which the task belongs to whoever frees the request). */
static void task_complete(bufpool_task_t *t)
{
    stack_put(&t->stack);
    ompi_request_t *req = &t->super.super;
    req->req_status.MPI_ERROR =
        OMPI_SUCCESS == t->rc ? MPI_SUCCESS : ompi_errcode_get_mpi_code(t->rc);
    ompi_request_complete(req, true);
}

static int bufpool_nb_progress(void)
{
    int completed = 0;
    /* Nothing in flight: one load (the common case once idle). */
    if (0 == __atomic_load_n(&nb.active, __ATOMIC_RELAXED)) {
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
    if (threads ? 0 != __atomic_exchange_n(&nb.progressing, 1, __ATOMIC_ACQUIRE)
                : 0 != nb.progressing) {
        return 0; /* another thread (or an outer call) resumes them */
    }
    nb.progressing = 1;
    OPAL_THREAD_LOCK(&nb.lock);
    for (bufpool_task_t *t = nb.head, *next; NULL != t; t = next) {
        if (!task_ready(t)) {
            next = t->next;
            continue;
        }
        /* Others may append tasks while this one runs: only this thread
         * removes any. */
        OPAL_THREAD_UNLOCK(&nb.lock);
        task_slice(t);
        OPAL_THREAD_LOCK(&nb.lock);
        next = t->next;
        if (t->fiber.done) {
            active_remove(t);
            OPAL_THREAD_UNLOCK(&nb.lock);
            task_complete(t);
            completed++;
            OPAL_THREAD_LOCK(&nb.lock);
        }
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    if (threads) {
        __atomic_store_n(&nb.progressing, 0, __ATOMIC_RELEASE);
    } else {
        nb.progressing = 0;
    }
    return completed;
}

/* ---------------------------------------------------------------------- */
/* Requests. */

static void task_body(void *arg)
{
    bufpool_task_t *t = arg;
    t->rc = bufpool_run(t->id, &t->args, &t->call, &t->plan, t->comm, t->module);
}

/* Start (or restart) the operation: a stack, the first slice now, then
 * progress.  Errors before the first slice are returned. */
static int task_start(bufpool_task_t *t)
{
    ompi_request_t *req = &t->super.super;
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
    bufpool_fiber_init(&t->fiber, &t->stack, task_body, t);
    task_slice(t);
    if (t->fiber.done) {
        task_complete(t);
    } else {
        active_add(t);
    }
    return OMPI_SUCCESS;
}

static void task_release_kept(bufpool_task_t *t)
{
    for (int i = 0; i < 3; i++) {
        if (NULL != t->kept_types[i]) {
            OBJ_RELEASE(t->kept_types[i]);
            t->kept_types[i] = NULL;
        }
    }
    if (NULL != t->kept_op) {
        OBJ_RELEASE(t->kept_op);
        t->kept_op = NULL;
    }
    for (int i = 0; i < TASK_SCRATCH_KEPT; i++) {
        if (NULL != t->kept[i].buf) {
            mca_coll_bufpool_scratch_put(t->kept[i].buf, t->kept[i].bytes);
            t->kept[i].buf = NULL;
        }
    }
    if (NULL != t->comm) {
        OBJ_RELEASE(t->comm);
        t->comm = NULL;
    }
    free(t->args.owned_counts);
    t->args.owned_counts = NULL;
}

static void task_cache(bufpool_task_t *t)
{
    OPAL_THREAD_LOCK(&nb.lock);
    if (nb.nfree_tasks < TASKS_CACHED) {
        t->next = nb.free_tasks;
        nb.free_tasks = t;
        nb.nfree_tasks++;
        t = NULL;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    if (NULL != t) {
        OBJ_RELEASE(t);
    }
}

/* MPI_Request_free, and MPI_Wait/Test of a nonblocking request. */
static int task_free(ompi_request_t **request)
{
    bufpool_task_t *t = (bufpool_task_t *)*request;
    if (!REQUEST_COMPLETE(&t->super.super)) {
        /* Freeing an active collective request is erroneous (and the task
         * still runs): say so, as libnbc does, and keep it. */
        return MPI_ERR_REQUEST;
    }
    if (FORM_PERSISTENT == t->form) {
        OPAL_THREAD_LOCK(&nb.lock);
        persistent_unlink(t);
        OPAL_THREAD_UNLOCK(&nb.lock);
    }
    task_release_kept(t);
    OMPI_REQUEST_FINI(&t->super.super);
    task_cache(t);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int task_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

/* MPI_Start(all) of persistent requests. */
static int task_start_persistent(size_t count, ompi_request_t **requests)
{
    int rc = OMPI_SUCCESS;
    for (size_t i = 0; i < count; i++) {
        bufpool_task_t *t = (bufpool_task_t *)requests[i];
        if (NULL == t || OMPI_REQUEST_COLL != t->super.super.req_type ||
            !t->super.super.req_persistent || OMPI_REQUEST_INACTIVE != t->super.super.req_state) {
            rc = OMPI_SUCCESS == rc ? MPI_ERR_REQUEST : rc;
            continue;
        }
        (void)__atomic_fetch_add(&COMPONENT->persistent_starts, 1, __ATOMIC_RELAXED);
        int start_rc = task_start(t);
        if (OMPI_SUCCESS != start_rc) {
            /* Nothing was posted: the request is complete with the error. */
            t->super.super.req_status.MPI_ERROR = ompi_errcode_get_mpi_code(start_rc);
            t->super.super.req_complete = REQUEST_COMPLETED;
            rc = OMPI_SUCCESS == rc ? start_rc : rc;
        }
    }
    return rc;
}

static void task_construct(bufpool_task_t *t)
{
    t->next = t->prev = NULL;
    t->pnext = t->pprev = NULL;
    t->outside_fn = NULL;
    t->outside_arg = NULL;
    memset(&t->stack, 0, sizeof(t->stack));
    t->comm = NULL;
    memset(t->kept_types, 0, sizeof(t->kept_types));
    t->kept_op = NULL;
    t->req_cache = t->aux_req_cache = NULL;
    t->req_cache_cap = t->aux_req_cache_cap = 0;
    memset(t->kept, 0, sizeof(t->kept));
}

static void task_destruct(bufpool_task_t *t)
{
    free(t->req_cache);
    free(t->aux_req_cache);
}

OBJ_CLASS_INSTANCE(bufpool_task_t, ompi_coll_base_nbc_request_t, task_construct, task_destruct);

static bufpool_task_t *task_get(void)
{
    bufpool_task_t *t = NULL;
    OPAL_THREAD_LOCK(&nb.lock);
    if (NULL != nb.free_tasks) {
        t = nb.free_tasks;
        nb.free_tasks = t->next;
        nb.nfree_tasks--;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    if (NULL == t) {
        t = OBJ_NEW(bufpool_task_t);
    }
    if (NULL != t) {
        t->next = t->prev = NULL;
    }
    return t;
}

static void keep_type(bufpool_task_t *t, int i, struct ompi_datatype_t *type)
{
    if (NULL != type && !ompi_datatype_is_predefined(type)) {
        OBJ_RETAIN(type);
        t->kept_types[i] = type;
    }
}

/* What the operation reads until it ends (a persistent one until freed):
 * the communicator, and the significant datatypes and operation, which
 * the application may free meanwhile (MPI allows it). */
static void task_retain(bufpool_task_t *t)
{
    const bufpool_args_t *a = &t->args;
    const bool in_place = MPI_IN_PLACE == a->sbuf;
    const bool is_root = ompi_comm_rank(t->comm) == a->root;
    OBJ_RETAIN(t->comm);
    switch (t->id) {
        case BUFPOOL_COLL_bcast:
            keep_type(t, 0, a->dtype);
            break;
        case BUFPOOL_COLL_allgather:
        case BUFPOOL_COLL_alltoall:
            keep_type(t, 0, in_place ? NULL : a->sdtype);
            keep_type(t, 1, a->rdtype);
            break;
        case BUFPOOL_COLL_gather:
            keep_type(t, 0, in_place && is_root ? NULL : a->sdtype);
            keep_type(t, 1, is_root ? a->rdtype : NULL);
            break;
        case BUFPOOL_COLL_scatter:
            keep_type(t, 0, is_root ? a->sdtype : NULL);
            keep_type(t, 1, MPI_IN_PLACE == a->rbuf && is_root ? NULL : a->rdtype);
            break;
        default: /* reductions and scans */
            keep_type(t, 0, a->dtype);
            if (!ompi_op_is_intrinsic(a->op)) {
                OBJ_RETAIN(a->op);
                t->kept_op = a->op;
            }
            break;
    }
}

/* Handed back to the previous module. */
#define NB_PREVIOUS 1

/* MPI_I<coll> or MPI_<coll>_init served by bufpool: OMPI_SUCCESS with
 * *request, an error, or NB_PREVIOUS (counted).  The decision is the
 * blocking entry path's, on the size maps of the form (a rules row may
 * say form=nonblocking or form=persistent), explained under the form's
 * name and counted as that form. */
static int nb_call(bufpool_coll_id_t id, nb_form_t form, const bufpool_args_t *args,
                   struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module,
                   ompi_request_t **request);

/* nb_call with reduce_scatter's counts as ints: Open MPI 6's size_t counts
 * (which fit: the entry checked) copied into an array the task owns. */
static int nb_call_counts(bufpool_coll_id_t id, nb_form_t form, const bufpool_args_t *args,
                          struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module,
                          ompi_request_t **request)
{
    if (BUFPOOL_COLL_reduce_scatter != id || NULL != args->rcounts) {
        return nb_call(id, form, args, comm, module, request);
    }
    bufpool_args_t a = *args;
    int *owned = bufpool_counts_int_copy(args->rcounts_any, ompi_comm_size(comm));
    if (NULL == owned) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    a.rcounts = owned;
    a.owned_counts = owned; /* nb_call gives them to the task or frees them */
    return nb_call(id, form, &a, comm, module, request);
}

static int nb_call(bufpool_coll_id_t id, nb_form_t form, const bufpool_args_t *args,
                   struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module,
                   ompi_request_t **request)
{
    bufpool_entry_t entry = BUFPOOL_ENTRY_DONE;
    bufpool_call_t call;
    bufpool_plan_t plan;
    /* An empty reduction or scan is done at once, as in the blocking form;
     * a hand-back looks at nothing but the size map. */
    if (!bufpool_args_empty(id, args, comm)) {
        size_t bytes;
        const bufpool_range_t *range = bufpool_args_range(id, form, module, args, comm, &bytes);
        if (bufpool_hands_back(module, form, id, range, bytes, comm)) {
            free(args->owned_counts);
            return NB_PREVIOUS;
        }
        call = bufpool_describe(id, args, comm);
        entry = bufpool_enter(id, form, module, &call, &range->choice, comm, &plan);
    }
    if (BUFPOOL_ENTRY_RUN != entry) {
        free(args->owned_counts); /* no task will read them */
    }
    switch (entry) {
        case BUFPOOL_ENTRY_PREVIOUS:
            return NB_PREVIOUS;
        case BUFPOOL_ENTRY_DONE:
            /* Nothing to move, on every rank alike. */
            if (FORM_PERSISTENT == form) {
                return ompi_request_persistent_noop_create(request);
            }
            *request = &ompi_request_empty;
            return OMPI_SUCCESS;
        default:
            break;
    }
    /* Past the decision every rank runs bufpool's algorithm: a local
     * shortage is an error, never a hand-back (the others would not
     * follow), as in the blocking path. */
    bufpool_task_t *t = task_get();
    if (NULL == t) {
        free(args->owned_counts);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    t->id = id;
    t->form = form;
    t->args = *args;
    t->call = call;
    t->plan = plan;
    t->comm = comm;
    t->module = module;
    /* Every rank reserves in the same order: the same block everywhere. */
    t->tag_base = tags_reserve(module, comm);
    if (FORM_PERSISTENT == form && !tags_record(module, t->tag_base)) {
        /* Past the decision: an error, never a hand-back. */
        t->args.owned_counts = NULL;
        task_cache(t);
        free(args->owned_counts);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    task_retain(t);

    ompi_request_t *req = &t->super.super;
    OMPI_REQUEST_INIT(req, FORM_PERSISTENT == form);
    req->req_type = OMPI_REQUEST_COLL;
    req->req_mpi_object.comm = comm;
    req->req_free = task_free;
    req->req_cancel = task_cancel;
    req->req_start = FORM_PERSISTENT == form ? task_start_persistent : NULL;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_status._cancelled = 0;
    t->super.cb.req_complete_cb = NULL;
    t->super.req_complete_cb_data = NULL;
    *request = req;
    if (FORM_PERSISTENT == form) {
        finalize_hook_once();
        persistent_link(t);
        return OMPI_SUCCESS; /* inactive until MPI_Start */
    }
    int rc = task_start(t);
    if (OMPI_SUCCESS != rc) {
        req->req_complete = REQUEST_COMPLETED;
        (void)task_free(request);
        *request = MPI_REQUEST_NULL;
    }
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The entry points: the arguments described once (bufpool_args_t), then
 * bufpool's task or the previous module's function. */

#define NB_EXPAND(...) __VA_ARGS__

#define NB_ENTRIES(name, params, args, fits, init)                                                 \
    int mca_coll_bufpool_i##name(NB_EXPAND params, ompi_request_t **request,                       \
                                 mca_coll_base_module_t *base)                                     \
    {                                                                                              \
        mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;                     \
        const bufpool_args_t a = NB_EXPAND init;                                                   \
        int rc = (fits) ? nb_call_counts(BUFPOOL_COLL_##name, FORM_NONBLOCKING, &a, comm, module,  \
                                         request)                                                  \
                        : NB_PREVIOUS;                                                             \
        if (!(fits)) {                                                                             \
            bufpool_module_count(&module->fallbacks[FORM_NONBLOCKING][BUFPOOL_COLL_##name]);       \
        }                                                                                          \
        if (NB_PREVIOUS == rc) {                                                                   \
            rc = module->prev_i##name(NB_EXPAND args, request, module->prev_i##name##_module);     \
        }                                                                                          \
        return rc;                                                                                 \
    }                                                                                              \
    int mca_coll_bufpool_##name##_init(NB_EXPAND params, struct ompi_info_t *info,                 \
                                       ompi_request_t **request, mca_coll_base_module_t *base)     \
    {                                                                                              \
        mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;                     \
        const bufpool_args_t a = NB_EXPAND init;                                                   \
        int rc = (fits) ? nb_call_counts(BUFPOOL_COLL_##name, FORM_PERSISTENT, &a, comm, module,   \
                                         request)                                                  \
                        : NB_PREVIOUS;                                                             \
        if (!(fits)) {                                                                             \
            bufpool_module_count(&module->fallbacks[FORM_PERSISTENT][BUFPOOL_COLL_##name]);        \
        }                                                                                          \
        if (NB_PREVIOUS == rc) {                                                                   \
            rc = module->prev_##name##_init(NB_EXPAND args, info, request,                         \
                                            module->prev_##name##_init_module);                    \
        }                                                                                          \
        return rc;                                                                                 \
    }

#define NB_COUNT(c) ((c) > 0 ? (size_t)(c) : 0)

/* Reductions and scans of count x dtype. */
#define NB_REDUCTION(name)                                                                         \
    NB_ENTRIES(name,                                                                               \
               (const void *sbuf, void *rbuf, bufpool_count_t count,                               \
                struct ompi_datatype_t *dtype, struct ompi_op_t *op,                               \
                struct ompi_communicator_t *comm),                                                 \
               (sbuf, rbuf, count, dtype, op, comm), BUFPOOL_COUNT_FITS(count),                    \
               ({.sbuf = sbuf, .rbuf = rbuf, .count = NB_COUNT(count), .dtype = dtype, .op = op}))
NB_REDUCTION(allreduce)
NB_REDUCTION(scan)
NB_REDUCTION(exscan)
NB_REDUCTION(reduce_scatter_block)

NB_ENTRIES(reduce,
           (const void *sbuf, void *rbuf, bufpool_count_t count, struct ompi_datatype_t *dtype,
            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm),
           (sbuf, rbuf, count, dtype, op, root, comm), BUFPOOL_COUNT_FITS(count),
           ({.sbuf = sbuf,
             .rbuf = rbuf,
             .count = NB_COUNT(count),
             .dtype = dtype,
             .op = op,
             .root = root}))

NB_ENTRIES(reduce_scatter,
           (const void *sbuf, void *rbuf, bufpool_counts_t rcounts, struct ompi_datatype_t *dtype,
            struct ompi_op_t *op, struct ompi_communicator_t *comm),
           (sbuf, rbuf, rcounts, dtype, op, comm),
           bufpool_counts_fit(rcounts, ompi_comm_size(comm)),
           ({.sbuf = sbuf,
             .rbuf = rbuf,
             .rcounts = BUFPOOL_COUNTS_INT_PTR(rcounts),
             .rcounts_any = rcounts,
             .dtype = dtype,
             .op = op}))

NB_ENTRIES(bcast,
           (void *buf, bufpool_count_t count, struct ompi_datatype_t *dtype, int root,
            struct ompi_communicator_t *comm),
           (buf, count, dtype, root, comm), BUFPOOL_BYTES_FIT(bufpool_bytes(dtype, count)),
           ({.rbuf = buf, .count = NB_COUNT(count), .dtype = dtype, .root = root}))

/* Block exchanges: scount x sdtype out, rcount x rdtype in. */
#define NB_EXCHANGE(name)                                                                          \
    NB_ENTRIES(name,                                                                               \
               (const void *sbuf, bufpool_count_t scount, struct ompi_datatype_t *sdtype,          \
                void *rbuf, bufpool_count_t rcount, struct ompi_datatype_t *rdtype,                \
                struct ompi_communicator_t *comm),                                                 \
               (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm),                                 \
               BUFPOOL_BYTES_FIT(bufpool_bytes(rdtype, rcount)),                                   \
               ({.sbuf = sbuf,                                                                     \
                 .scount = (int)scount,                                                            \
                 .sdtype = sdtype,                                                                 \
                 .rbuf = rbuf,                                                                     \
                 .rcount = (int)rcount,                                                            \
                 .rdtype = rdtype}))
NB_EXCHANGE(allgather)
NB_EXCHANGE(alltoall)

#define NB_ROOTED(name)                                                                            \
    NB_ENTRIES(                                                                                    \
        name,                                                                                      \
        (const void *sbuf, bufpool_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf,     \
         bufpool_count_t rcount, struct ompi_datatype_t *rdtype, int root,                         \
         struct ompi_communicator_t *comm),                                                        \
        (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm),                                  \
        BUFPOOL_BYTES_FIT(bufpool_rooted_bytes(BUFPOOL_COLL_gather == BUFPOOL_COLL_##name, scount, \
                                               sdtype, rcount, rdtype, root, comm)),               \
        ({.sbuf = sbuf,                                                                            \
          .scount = (int)scount,                                                                   \
          .sdtype = sdtype,                                                                        \
          .rbuf = rbuf,                                                                            \
          .rcount = (int)rcount,                                                                   \
          .rdtype = rdtype,                                                                        \
          .root = root}))
NB_ROOTED(gather)
NB_ROOTED(scatter)

/* ---------------------------------------------------------------------- */
/* The module's part. */

void bufpool_nb_module_query(mca_coll_bufpool_module_t *module)
{
#define NB_INSTALL(name)                                                                           \
    module->super.coll_i##name =                                                                   \
        COMPONENT->coll[BUFPOOL_COLL_##name].enabled && COMPONENT->nonblocking                     \
            ? mca_coll_bufpool_i##name                                                             \
            : NULL;                                                                                \
    module->super.coll_##name##_init =                                                             \
        COMPONENT->coll[BUFPOOL_COLL_##name].enabled && COMPONENT->persistent                      \
            ? mca_coll_bufpool_##name##_init                                                       \
            : NULL;
    BUFPOOL_FOREACH_COLL(NB_INSTALL)
#undef NB_INSTALL
}

void bufpool_nb_module_enable(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm)
{
    /* A form the rules give wholly to the previous module here is not
     * installed (unless its calls are to be explained), as for the
     * blocking form: libnbc's own entry then costs what it costs without
     * bufpool (the nonblocking entry's hand-back measured 18-26 ns). */
#define NB_UNINSTALL_WHOLE(name)                                                                   \
    if (!module->explain) {                                                                        \
        if (bufpool_module_hands_back_all(module, BUFPOOL_FORM_NONBLOCKING,                        \
                                          BUFPOOL_COLL_##name)) {                                  \
            module->super.coll_i##name = NULL;                                                     \
        }                                                                                          \
        if (bufpool_module_hands_back_all(module, BUFPOOL_FORM_PERSISTENT, BUFPOOL_COLL_##name)) { \
            module->super.coll_##name##_init = NULL;                                               \
        }                                                                                          \
    }
    BUFPOOL_FOREACH_COLL(NB_UNINSTALL_WHOLE)
#undef NB_UNINSTALL_WHOLE
    /* Below us there must be a function to hand back to; where there is
     * none, ours stays out (Open MPI keeps whatever is there). */
#define NB_SAVE(fn)                                                                                \
    if (NULL != module->super.coll_##fn) {                                                         \
        if (NULL == comm->c_coll->coll_##fn || NULL == comm->c_coll->coll_##fn##_module) {         \
            module->super.coll_##fn = NULL;                                                        \
        } else {                                                                                   \
            module->prev_##fn = comm->c_coll->coll_##fn;                                           \
            module->prev_##fn##_module = comm->c_coll->coll_##fn##_module;                         \
            OBJ_RETAIN(module->prev_##fn##_module);                                                \
        }                                                                                          \
    }
#define NB_SAVE_BOTH(name) NB_SAVE(i##name) NB_SAVE(name##_init)
    BUFPOOL_FOREACH_COLL(NB_SAVE_BOTH)
#undef NB_SAVE_BOTH
#undef NB_SAVE
#if BUFPOOL_MODULE_INSTALLS_ITSELF
#define NB_INSTALL_SELF(fn)                                                                        \
    if (NULL != module->super.coll_##fn) {                                                         \
        comm->c_coll->coll_##fn = module->super.coll_##fn;                                         \
        comm->c_coll->coll_##fn##_module = &module->super;                                         \
    }
#define NB_INSTALL_BOTH(name) NB_INSTALL_SELF(i##name) NB_INSTALL_SELF(name##_init)
    BUFPOOL_FOREACH_COLL(NB_INSTALL_BOTH)
#undef NB_INSTALL_BOTH
#undef NB_INSTALL_SELF
#endif
}

void bufpool_nb_module_disable(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm)
{
#define NB_RESTORE(fn)                                                                             \
    if (NULL != module->prev_##fn##_module) {                                                      \
        comm->c_coll->coll_##fn = module->prev_##fn;                                               \
        comm->c_coll->coll_##fn##_module = module->prev_##fn##_module;                             \
    }
#define NB_RESTORE_BOTH(name) NB_RESTORE(i##name) NB_RESTORE(name##_init)
    BUFPOOL_FOREACH_COLL(NB_RESTORE_BOTH)
#undef NB_RESTORE_BOTH
#undef NB_RESTORE
}

void bufpool_nb_module_destruct(mca_coll_bufpool_module_t *module)
{
#define NB_RELEASE(fn)                                                                             \
    if (NULL != module->prev_##fn##_module) {                                                      \
        OBJ_RELEASE(module->prev_##fn##_module);                                                   \
        module->prev_##fn##_module = NULL;                                                         \
    }
#define NB_RELEASE_BOTH(name) NB_RELEASE(i##name) NB_RELEASE(name##_init)
    BUFPOOL_FOREACH_COLL(NB_RELEASE_BOTH)
#undef NB_RELEASE_BOTH
#undef NB_RELEASE
}

/* ---------------------------------------------------------------------- */
/* The component's part. */

static int read_stack_peak(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)pvar;
    (void)obj;
    *(unsigned long long *)value = stacks_used_peak();
    return OPAL_SUCCESS;
}

static int read_registered(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)pvar;
    (void)obj;
    *(unsigned long long *)value = __atomic_load_n(&nb.registered, __ATOMIC_RELAXED) ? 1 : 0;
    return OPAL_SUCCESS;
}

void bufpool_nb_register_pvars(void)
{
    (void)mca_base_component_pvar_register(
        &COMPONENT->super.collm_version, "nb_progress_registered",
        "1 while bufpool's progress callback is registered with Open MPI (tasks in flight, or "
        "fewer than 1024 progress calls since the last one ended), else 0",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_LEVEL, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        read_registered, NULL, NULL, NULL);
    (void)mca_base_component_pvar_register(
        &COMPONENT->super.collm_version, "nb_stack_bytes_peak",
        "Deepest use of a task's stack by bufpool's nonblocking and persistent collectives, in "
        "bytes to a page (the stacks are coll_bufpool_nb_stack_size bytes)",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_HIGHWATERMARK, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
        NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read_stack_peak, NULL, NULL,
        NULL);
}

void bufpool_nb_report(void)
{
    if (0 == COMPONENT->nb_stacks_mapped) {
        return;
    }
    opal_output(0,
                "  nonblocking and persistent: %llu tasks in flight at most, %llu persistent "
                "starts, %llu stacks of %zu bytes mapped, deepest use %zu bytes",
                (unsigned long long)COMPONENT->nb_tasks_peak,
                (unsigned long long)COMPONENT->persistent_starts,
                (unsigned long long)COMPONENT->nb_stacks_mapped, COMPONENT->nb_stack_size,
                stacks_used_peak());
}

void bufpool_nb_close(void)
{
    if (!nb.constructed) {
        return;
    }
    OPAL_THREAD_LOCK(&nb.lock);
    while (NULL != nb.free_tasks) {
        bufpool_task_t *t = nb.free_tasks;
        nb.free_tasks = t->next;
        OBJ_RELEASE(t);
    }
    nb.nfree_tasks = 0;
    while (nb.nfree_stacks > 0) {
        bufpool_fiber_stack_unmap(&nb.free_stacks[--nb.nfree_stacks]);
    }
    free(nb.free_stacks);
    nb.free_stacks = NULL;
    nb.cap_stacks = 0;
    if (nb.registered) {
        (void)opal_progress_unregister(bufpool_nb_progress);
        nb.registered = false;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    OBJ_DESTRUCT(&nb.lock);
    nb.constructed = false;
}
