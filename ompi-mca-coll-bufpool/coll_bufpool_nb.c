/*
 * coll/bufpool's nonblocking and persistent collectives: the request side.
 *
 * A nonblocking or persistent collective is a task (runtime/
 * coll_bufpool_task.h) whose body is the blocking collective's own
 * algorithm (bufpool_run, the same plan from the same decision), so the
 * three forms give the same bits, cut messages alike and hold the same
 * scratch, with no second implementation of any algorithm.  This file makes
 * the MPI requests around them (ompi_coll_base_nbc_request_t, so that Open
 * MPI's retain of user operations and datatypes works on them).
 *
 * Life of a request:
 *   MPI_I<coll>     the entry point (generated from coll_bufpool_entries.h)
 *                   finds the call's range in the size map of its form;
 *                   hand back to the previous module (libnbc), or plan,
 *                   reserve a block of tags, take a request and start its
 *                   task (the first transfers are posted before the call
 *                   returns);
 *   end             the task's request completes (the runtime);
 *   MPI_Wait..      free: communicator, datatypes and operation released,
 *                   the request back to the cache.
 *   MPI_<coll>_init decide and reserve tags once; the request is inactive;
 *   MPI_Start       the same task again, with the same tags and plan; it
 *                   keeps its scratch between starts;
 *   MPI_Request_free  scratch back to the pool; an active request is an
 *                   error (MPI_ERR_REQUEST), as libnbc answers;
 *   MPI_Finalize    persistent requests the application left are released.
 * See docs/collectives.md, "Nonblocking and persistent collectives".
 */
#include "coll_bufpool_nb.h"
#include "coll_bufpool_entry.h"
#include "coll_bufpool_entries.h"
#include "algorithms/coll_bufpool_node.h"
#include "runtime/coll_bufpool_scratch.h"
#include "runtime/coll_bufpool_wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/errhandler/errcode-internal.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"

#define COMPONENT (&mca_coll_bufpool_component)

/* Requests kept for reuse once their operation is over (more in flight at
 * once are made and, at the end, released). */
#define REQUESTS_CACHED 64

/* A collective's request: its task first (whose first member is the MPI
 * request), then what the task's body runs. */
typedef struct bufpool_coll_task {
    bufpool_task_t task;
    struct bufpool_coll_task *next_free;     /* the cache */
    struct bufpool_coll_task *pnext, *pprev; /* persistent ones not freed */
    bufpool_coll_id_t id;
    int form; /* BUFPOOL_FORM_NONBLOCKING or _PERSISTENT */
    bufpool_args_t args;
    bufpool_call_t call;
    bufpool_plan_t plan;
    struct ompi_communicator_t *comm;
    mca_coll_bufpool_module_t *module;
    /* Retained for the request's life: non-predefined datatypes, a user op. */
    struct ompi_datatype_t *kept_types[3];
    struct ompi_op_t *kept_op;
    /* A call handed back whose own block bufpool mends (own_block_request):
     * the previous module's request, made with the mended arguments, and
     * the block (allgather's scratch held to the end); NULL otherwise. */
    ompi_request_t *inner;
    bufpool_own_block_t own;
    /* A persistent request's own node segments, of the communicator and
     * of its host (bufpool_node_run: ranks may start persistent requests in
     * any order), kept from start to start and unmapped when it goes. */
    bufpool_node_homes_t node_homes;
} bufpool_coll_task_t;

OBJ_CLASS_DECLARATION(bufpool_coll_task_t);

static struct {
    opal_mutex_t lock; /* the cache and the persistent list */
    bool constructed;
    bufpool_coll_task_t *free; /* through next_free */
    int nfree;
    /* Persistent requests not yet freed, released at MPI_Finalize if the
     * application leaves them (finalize_hook). */
    bufpool_coll_task_t *persistent;
    bool finalize_hooked;
} nb;

void bufpool_nb_open(void)
{
    OBJ_CONSTRUCT(&nb.lock, opal_mutex_t);
    nb.constructed = true;
    nb.free = NULL;
    nb.nfree = 0;
    nb.persistent = NULL;
    nb.finalize_hooked = false;
    bufpool_tasks_open(COMPONENT->nb_stack_size, COMPONENT->nonblocking || COMPONENT->persistent,
                       COMPONENT->test_nbc_tag_range);
}

/* ---------------------------------------------------------------------- */
/* The task's body: the blocking collective's algorithm. */

static int coll_task_body(bufpool_task_t *task)
{
    bufpool_coll_task_t *t = (bufpool_coll_task_t *)task;
    return bufpool_run(t->id, &t->args, &t->call, &t->plan, t->comm, &t->module->state,
                       BUFPOOL_FORM_PERSISTENT == t->form ? &t->node_homes : NULL);
}

/* Start the previous module's persistent request as MPI_Start does: a
 * request without a start function is a no-op one (libnbc's for an empty
 * schedule: a gather of one process in place, as the mended call is),
 * which starting only marks active. */
static int start_inner(ompi_request_t **inner)
{
    if (NULL != (*inner)->req_start) {
        return (*inner)->req_start(1, inner);
    }
    (*inner)->req_state = OMPI_REQUEST_ACTIVE;
    return OMPI_SUCCESS;
}

/* The body of a hand-back whose own block bufpool mends
 * (own_block_request): persistent, the block copied (this start's input;
 * not alltoall's) and the previous module's request started; then, either
 * form, that request awaited, and alltoall's block copied again. */
static int own_block_body(bufpool_task_t *task)
{
    bufpool_coll_task_t *t = (bufpool_coll_task_t *)task;
    const bool after = bufpool_own_block_after(&t->own);
    if (BUFPOOL_FORM_PERSISTENT == t->form) {
        int rc = after ? OMPI_SUCCESS : bufpool_own_block_hand_back(&t->own);
        if (OMPI_SUCCESS == rc) {
            rc = start_inner(&t->inner);
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    /* Awaited in the task; a persistent request then becomes inactive, a
     * nonblocking one is freed (t->inner then MPI_REQUEST_NULL). */
    int rc = bufpool_wait(&t->inner);
    return OMPI_SUCCESS == rc && after ? bufpool_own_block_hand_back(&t->own) : rc;
}

/* ---------------------------------------------------------------------- */
/* Persistent requests the application never frees are released at
 * MPI_Finalize: MPI_COMM_SELF's attributes are deleted first thing there
 * (MPI, "Allowing User Functions at Process Termination"), while the
 * communicators they retain still exist. */

static void persistent_link(bufpool_coll_task_t *t)
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

static void persistent_unlink(bufpool_coll_task_t *t)
{
    OPAL_THREAD_LOCK(&nb.lock);
    if (NULL != t->pprev) {
        t->pprev->pnext = t->pnext;
    } else if (nb.persistent == t) {
        nb.persistent = t->pnext;
    }
    if (NULL != t->pnext) {
        t->pnext->pprev = t->pprev;
    }
    t->pnext = t->pprev = NULL;
    OPAL_THREAD_UNLOCK(&nb.lock);
}

static void request_release(bufpool_coll_task_t *t);

/* Whether t's request completed; if so, whatever the thread that
 * completed it (any thread's progress runs the task) wrote before is seen
 * by this one, which frees or caches it (bufpool_task_ended). */
static bool request_completed(bufpool_coll_task_t *t)
{
    if (!REQUEST_COMPLETE(&t->task.super.super)) {
        return false;
    }
    bufpool_task_ended(&t->task);
    return true;
}

static int finalize_hook(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)value, (void)extra;
    /* The keyval's last use: freed now, or Open MPI keeps it to the end. */
    (void)PMPI_Comm_free_keyval(&keyval);
    OPAL_THREAD_LOCK(&nb.lock);
    bufpool_coll_task_t *t = nb.persistent, *next;
    nb.persistent = NULL;
    OPAL_THREAD_UNLOCK(&nb.lock);
    for (; NULL != t; t = next) {
        next = t->pnext;
        t->pnext = t->pprev = NULL;
        /* An active one (started, not completed) is the application's
         * error: it is left as it is. */
        if (request_completed(t)) {
            request_release(t);
            OMPI_REQUEST_FINI(&t->task.super.super);
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
/* Requests. */

/* What the request holds until it goes: the communicator, the retained
 * datatypes and operation, the task's kept scratch, copied counts. */
static void request_release(bufpool_coll_task_t *t)
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
    bufpool_scratch_drop_kept(&t->task);
    bufpool_node_free(t->node_homes.all.node);
    bufpool_node_free(t->node_homes.host.node);
    t->node_homes = (bufpool_node_homes_t){{0}};
    if (NULL != t->comm) {
        OBJ_RELEASE(t->comm);
        t->comm = NULL;
    }
    free(t->args.owned_counts);
    t->args.owned_counts = NULL;
    if (NULL != t->inner) {
        if (MPI_REQUEST_NULL != t->inner) {
            (void)ompi_request_free(&t->inner);
        }
        t->inner = NULL;
        bufpool_own_block_release(&t->own);
    }
}

static void request_cache(bufpool_coll_task_t *t)
{
    OPAL_THREAD_LOCK(&nb.lock);
    if (nb.nfree < REQUESTS_CACHED) {
        t->next_free = nb.free;
        nb.free = t;
        nb.nfree++;
        t = NULL;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    if (NULL != t) {
        OBJ_RELEASE(t);
    }
}

static bufpool_coll_task_t *request_get(void)
{
    bufpool_coll_task_t *t = NULL;
    OPAL_THREAD_LOCK(&nb.lock);
    if (NULL != nb.free) {
        t = nb.free;
        nb.free = t->next_free;
        nb.nfree--;
    }
    OPAL_THREAD_UNLOCK(&nb.lock);
    return NULL != t ? t : OBJ_NEW(bufpool_coll_task_t);
}

/* MPI_Request_free, and MPI_Wait/Test of a nonblocking request. */
static int request_free(ompi_request_t **request)
{
    bufpool_coll_task_t *t = (bufpool_coll_task_t *)*request;
    if (!request_completed(t)) {
        /* Freeing an active collective request is erroneous (and the task
         * still runs): say so, as libnbc does, and keep it. */
        return MPI_ERR_REQUEST;
    }
    if (BUFPOOL_FORM_PERSISTENT == t->form) {
        persistent_unlink(t);
    }
    request_release(t);
    OMPI_REQUEST_FINI(&t->task.super.super);
    request_cache(t);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

/* MPI_Start(all) of persistent requests. */
static int request_start_persistent(size_t count, ompi_request_t **requests)
{
    int rc = OMPI_SUCCESS;
    for (size_t i = 0; i < count; i++) {
        bufpool_coll_task_t *t = (bufpool_coll_task_t *)requests[i];
        ompi_request_t *req = NULL != t ? &t->task.super.super : NULL;
        if (NULL == req || OMPI_REQUEST_COLL != req->req_type || !req->req_persistent ||
            OMPI_REQUEST_INACTIVE != req->req_state) {
            rc = OMPI_SUCCESS == rc ? MPI_ERR_REQUEST : rc;
            continue;
        }
        (void)__atomic_fetch_add(&COMPONENT->persistent_starts, 1, __ATOMIC_RELAXED);
        int start_rc = bufpool_task_start(&t->task);
        if (OMPI_SUCCESS != start_rc) {
            /* Nothing was posted: the request is complete with the error. */
            req->req_status.MPI_ERROR = ompi_errcode_get_mpi_code(start_rc);
            req->req_complete = REQUEST_COMPLETED;
            rc = OMPI_SUCCESS == rc ? start_rc : rc;
        }
    }
    return rc;
}

static void coll_task_construct(bufpool_coll_task_t *t)
{
    t->task.req_cache = t->task.aux_req_cache = NULL;
    t->task.req_cache_cap = t->task.aux_req_cache_cap = 0;
    bufpool_task_init(&t->task, coll_task_body, false);
    t->next_free = t->pnext = t->pprev = NULL;
    t->comm = NULL;
    memset(t->kept_types, 0, sizeof(t->kept_types));
    t->kept_op = NULL;
    t->args.owned_counts = NULL;
    t->inner = NULL;
    t->own.scratch = NULL;
    t->node_homes = (bufpool_node_homes_t){{0}};
}

static void coll_task_destruct(bufpool_coll_task_t *t)
{
    bufpool_task_destroy(&t->task);
}

OBJ_CLASS_INSTANCE(bufpool_coll_task_t, ompi_coll_base_nbc_request_t, coll_task_construct,
                   coll_task_destruct);

static void keep_type(bufpool_coll_task_t *t, int i, struct ompi_datatype_t *type)
{
    if (NULL != type && !ompi_datatype_is_predefined(type)) {
        OBJ_RETAIN(type);
        t->kept_types[i] = type;
    }
}

/* What the operation reads until it ends (a persistent one until freed):
 * the communicator, and the significant datatypes and operation, which
 * the application may free meanwhile (MPI allows it). */
static void request_retain(bufpool_coll_task_t *t)
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
        case BUFPOOL_COLL_barrier:
            /* the communicator only */
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

/* The MPI request of t (its task, arguments, communicator and module set)
 * in form: what it retains, its fields, and a persistent one's place in
 * the list (inactive until MPI_Start). */
static void request_open(bufpool_coll_task_t *t, int form, ompi_request_t **request)
{
    request_retain(t);
    ompi_request_t *req = &t->task.super.super;
    OMPI_REQUEST_INIT(req, BUFPOOL_FORM_PERSISTENT == form);
    req->req_type = OMPI_REQUEST_COLL;
    req->req_mpi_object.comm = t->comm;
    req->req_free = request_free;
    req->req_cancel = request_cancel;
    req->req_start = BUFPOOL_FORM_PERSISTENT == form ? request_start_persistent : NULL;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_status._cancelled = 0;
    t->task.super.cb.req_complete_cb = NULL;
    t->task.super.req_complete_cb_data = NULL;
    *request = req;
    if (BUFPOOL_FORM_PERSISTENT == form) {
        finalize_hook_once();
        persistent_link(t);
    }
}

/* The request of a call bufpool runs: tags, retained objects, the MPI
 * request's fields; a nonblocking one starts at once.  Past the decision
 * every rank runs bufpool's algorithm: a local shortage is an error, never
 * a hand-back (the others would not follow), as in the blocking path. */
static int request_make(bufpool_coll_id_t id, int form, const bufpool_args_t *args,
                        const bufpool_call_t *call, const bufpool_plan_t *plan,
                        struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module,
                        ompi_request_t **request)
{
    bufpool_coll_task_t *t = request_get();
    if (NULL == t) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    bufpool_task_init(&t->task, coll_task_body, BUFPOOL_FORM_PERSISTENT == form);
    t->id = id;
    t->form = form;
    t->args = *args;
    t->call = *call;
    t->plan = *plan;
    t->comm = comm;
    t->module = module;
    if (BUFPOOL_FORM_PERSISTENT == form) {
        t->node_homes.all.fit_bytes = t->node_homes.host.fit_bytes = call->bytes;
    }
    /* Every rank reserves in the same order: the same block everywhere. */
    if (!bufpool_task_reserve_tags(&module->persist_tags, comm, BUFPOOL_FORM_PERSISTENT == form,
                                   &t->task.tag_base) ||
        !bufpool_args_own_counts(&t->args, ompi_comm_size(comm))) {
        t->comm = NULL;
        request_release(t);
        request_cache(t);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    request_open(t, form, request);
    if (BUFPOOL_FORM_PERSISTENT == form) {
        return OMPI_SUCCESS; /* inactive until MPI_Start */
    }
    ompi_request_t *req = *request;
    int rc = bufpool_task_start(&t->task);
    if (OMPI_SUCCESS != rc) {
        req->req_complete = REQUEST_COMPLETED;
        (void)request_free(request);
        *request = MPI_REQUEST_NULL;
    }
    return rc;
}

/* The request of a call handed back whose own block bufpool mends
 * (bufpool_own_block_at_risk) where the previous module's request alone
 * would not do: persistent (the block copied at every start), holding
 * scratch to the end (allgather's, nonblocking) or copying after the call
 * (alltoall's, nonblocking).  *request, the previous
 * module's, made with the mended arguments (a nonblocking one already
 * started), goes inside a task of ours, which takes own's scratch.  No
 * tags are reserved: this rank alone wraps its request, and the counter
 * every rank shares must advance alike everywhere.  On an error the
 * previous module's request is completed and freed, and the scratch
 * released. */
static int own_block_request(bufpool_coll_id_t id, int form, bufpool_own_block_t *own,
                             struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module,
                             ompi_request_t **request)
{
    bufpool_coll_task_t *t = request_get();
    if (NULL == t) {
        /* A nonblocking request is completed and freed, a persistent
         * (inactive) one freed. */
        if (BUFPOOL_FORM_PERSISTENT != form) {
            (void)bufpool_wait(request);
        } else {
            (void)ompi_request_free(request);
        }
        bufpool_own_block_release(own);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    bufpool_task_init(&t->task, own_block_body, BUFPOOL_FORM_PERSISTENT == form);
    t->id = id;
    t->form = form;
    /* What request_retain keeps: the block's two datatypes. */
    t->args = (bufpool_args_t){.sbuf = own->sbuf,
                               .sdtype = own->sdtype,
                               .rbuf = own->rbuf,
                               .rdtype = own->rdtype,
                               .root = own->root};
    t->own = *own;
    t->comm = comm;
    t->module = module;
    t->inner = *request;
    request_open(t, form, request);
    if (BUFPOOL_FORM_PERSISTENT == form) {
        return OMPI_SUCCESS;
    }
    int rc = bufpool_task_start(&t->task);
    if (OMPI_SUCCESS != rc) {
        /* No stack for the task: the previous module's request is waited
         * for here, the scratch released with ours. */
        (void)bufpool_wait(&t->inner);
        t->task.super.super.req_complete = REQUEST_COMPLETED;
        (void)request_free(request);
        *request = MPI_REQUEST_NULL;
    }
    return rc;
}

/* MPI_I<coll> or MPI_<coll>_init, its range found by the entry point (for
 * bytes, in the size map of form: a rules row may say form=nonblocking or
 * form=persistent): OMPI_SUCCESS with *request, an error, or NB_PREVIOUS
 * (counted).  The plan is the blocking entry path's, explained under the
 * form's name and counted as that form. */
static int nb_call(bufpool_coll_id_t id, int form, const bufpool_args_t *args, bool empty,
                   const bufpool_range_t *range, size_t bytes, struct ompi_communicator_t *comm,
                   mca_coll_bufpool_module_t *module, ompi_request_t **request)
{
    bufpool_entry_t entry = BUFPOOL_ENTRY_DONE;
    bufpool_call_t call;
    bufpool_plan_t plan;
    /* An empty reduction or scan is done at once, as in the blocking form;
     * a hand-back looks at nothing but the range. */
    if (!empty) {
        if (bufpool_hands_back(module, form, id, range, bytes, comm)) {
            return NB_PREVIOUS;
        }
        call = bufpool_describe(id, args, comm);
        entry = bufpool_enter(id, form, module, &call, &range->choice, comm, &plan);
    }
    switch (entry) {
        case BUFPOOL_ENTRY_PREVIOUS:
            return NB_PREVIOUS;
        case BUFPOOL_ENTRY_DONE:
            /* Nothing to move, on every rank alike. */
            if (BUFPOOL_FORM_PERSISTENT == form) {
                return ompi_request_persistent_noop_create(request);
            }
            *request = &ompi_request_empty;
            return OMPI_SUCCESS;
        default:
            return request_make(id, form, args, &call, &plan, comm, module, request);
    }
}

/* ---------------------------------------------------------------------- */
/* The entry points, from the table (coll_bufpool_entries.h): the call's
 * range found once, then bufpool's request or the previous module's
 * function. */

/* The entry points of the nonblocking and the persistent form, as the
 * blocking one (coll_bufpool_entry.c): a call that the range hands back
 * pays for the range and a counter only, and goes on to the previous
 * module's function (a whole nb_call in the way cost 10-25 ns a call, 4-5 %
 * of an 8-byte MPI_Ibcast, MPI_Ireduce or MPI_Iallreduce at 2 ranks,
 * bench/coll_toll -F nonblocking, 2026-11-27); every other call takes the
 * slow path, out of line, with the same range.  A hand-back whose own
 * block is at risk (fn##_previous_own) has it copied at the call when
 * nonblocking (the root may not read its receive buffer before completion;
 * allgather's scratch is held to the end in a request of ours; alltoall's
 * block is copied again once the previous module's request completes,
 * inside ours), at every start when persistent (own_block_request). */
#define NB_FORM_ENTRY(name, form, fn, prev, params, args, tail_params, tail_args, prep, cls,       \
                      bytes, fits, empty, init, own, mended)                                       \
    static BUFPOOL_NOINLINE int fn##_previous_own(                                                 \
        BUFPOOL_EXPAND params, BUFPOOL_EXPAND tail_params, mca_coll_bufpool_module_t *module)      \
    {                                                                                              \
        bufpool_own_block_t bp_own_ = BUFPOOL_EXPAND own;                                          \
        if (!bufpool_own_block_at_risk(&bp_own_, comm)) {                                          \
            return module->prev(BUFPOOL_EXPAND args, BUFPOOL_EXPAND tail_args,                     \
                                module->prev##_module);                                            \
        }                                                                                          \
        const bool bp_after_ = bufpool_own_block_after(&bp_own_);                                  \
        int rc = bufpool_own_block_prepare(&bp_own_);                                              \
        if (OMPI_SUCCESS == rc && BUFPOOL_FORM_PERSISTENT != form && !bp_after_) {                 \
            rc = bufpool_own_block_hand_back(&bp_own_);                                            \
        }                                                                                          \
        if (OMPI_SUCCESS == rc) {                                                                  \
            rc = bp_after_ ? module->prev(BUFPOOL_EXPAND args, BUFPOOL_EXPAND tail_args,           \
                                          module->prev##_module)                                   \
                           : module->prev(BUFPOOL_EXPAND mended, BUFPOOL_EXPAND tail_args,         \
                                          module->prev##_module);                                  \
        }                                                                                          \
        if (OMPI_SUCCESS != rc) {                                                                  \
            bufpool_own_block_release(&bp_own_);                                                   \
            return rc;                                                                             \
        }                                                                                          \
        return BUFPOOL_FORM_PERSISTENT == form || bufpool_own_block_holds(&bp_own_)                \
                   ? own_block_request(BUFPOOL_COLL_##name, form, &bp_own_, comm, module, request) \
                   : OMPI_SUCCESS;                                                                 \
    }                                                                                              \
    static inline int fn##_previous(BUFPOOL_EXPAND params, BUFPOOL_EXPAND tail_params,             \
                                    mca_coll_bufpool_module_t *module)                             \
    {                                                                                              \
        const bufpool_own_block_t bp_own_ = BUFPOOL_EXPAND own;                                    \
        if (OPAL_UNLIKELY(bufpool_own_block_may_be_at_risk(&bp_own_))) {                           \
            return fn##_previous_own(BUFPOOL_EXPAND args, BUFPOOL_EXPAND tail_args, module);       \
        }                                                                                          \
        return module->prev(BUFPOOL_EXPAND args, BUFPOOL_EXPAND tail_args, module->prev##_module); \
    }                                                                                              \
    static BUFPOOL_NOINLINE int fn##_slow(BUFPOOL_EXPAND params, BUFPOOL_EXPAND tail_params,       \
                                          mca_coll_bufpool_module_t *module,                       \
                                          const bufpool_range_t *range, size_t bp_bytes_)          \
    {                                                                                              \
        prep;                                                                                      \
        int rc = NB_PREVIOUS;                                                                      \
        if (fits) {                                                                                \
            const bufpool_args_t a = BUFPOOL_EXPAND init;                                          \
            rc = nb_call(BUFPOOL_COLL_##name, form, &a, (empty), range, bp_bytes_, comm, module,   \
                         request);                                                                 \
        } else {                                                                                   \
            bufpool_module_count(&module->fallbacks[form][BUFPOOL_COLL_##name]);                   \
        }                                                                                          \
        return NB_PREVIOUS != rc                                                                   \
                   ? rc                                                                            \
                   : fn##_previous(BUFPOOL_EXPAND args, BUFPOOL_EXPAND tail_args, module);         \
    }                                                                                              \
    int mca_coll_bufpool_##fn(BUFPOOL_EXPAND params, BUFPOOL_EXPAND tail_params,                   \
                              mca_coll_base_module_t *base)                                        \
    {                                                                                              \
        mca_coll_bufpool_module_t *const module = (mca_coll_bufpool_module_t *)base;               \
        prep;                                                                                      \
        BUFPOOL_ENTRY_HEAD(module, form, name, cls, bytes, empty,                                  \
                           fn##_previous(BUFPOOL_EXPAND args, BUFPOOL_EXPAND tail_args, module))   \
        return fn##_slow(BUFPOOL_EXPAND args, BUFPOOL_EXPAND tail_args, module, range, bp_bytes_); \
    }

#define NB_ENTRIES(name, params, args, prep, cls, bytes, fits, empty, init, own, mended)           \
    NB_FORM_ENTRY(name, BUFPOOL_FORM_NONBLOCKING, i##name, prev_i##name, params, args,             \
                  (ompi_request_t * *request), (request), prep, cls, bytes, fits, empty, init,     \
                  own, mended)                                                                     \
    NB_FORM_ENTRY(name, BUFPOOL_FORM_PERSISTENT, name##_init, prev_##name##_init, params, args,    \
                  (struct ompi_info_t * info, ompi_request_t * *request), (info, request), prep,   \
                  cls, bytes, fits, empty, init, own, mended)
BUFPOOL_ENTRY_TABLE(NB_ENTRIES)
#undef NB_ENTRIES
#undef NB_FORM_ENTRY

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
     * bufpool (the nonblocking entry's hand-back measured 18-26 ns then;
     * with the fast path of NB_FORM_ENTRY, within the noise). */
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
    *(unsigned long long *)value = bufpool_tasks_stack_peak();
    return OPAL_SUCCESS;
}

static int read_registered(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)pvar;
    (void)obj;
    *(unsigned long long *)value = bufpool_tasks_progress_registered() ? 1 : 0;
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
    const bufpool_task_counters_t *c = &bufpool_task_counters;
    if (0 == c->stacks_mapped) {
        return;
    }
    opal_output(0,
                "  nonblocking and persistent: %llu tasks in flight at most, %llu persistent "
                "starts, %llu stacks of %zu bytes mapped, deepest use %zu bytes",
                (unsigned long long)c->tasks_peak, (unsigned long long)COMPONENT->persistent_starts,
                (unsigned long long)c->stacks_mapped, COMPONENT->nb_stack_size,
                bufpool_tasks_stack_peak());
}

void bufpool_nb_close(void)
{
    if (!nb.constructed) {
        return;
    }
    OPAL_THREAD_LOCK(&nb.lock);
    while (NULL != nb.free) {
        bufpool_coll_task_t *t = nb.free;
        nb.free = t->next_free;
        OBJ_RELEASE(t);
    }
    nb.nfree = 0;
    OPAL_THREAD_UNLOCK(&nb.lock);
    bufpool_tasks_close();
    OBJ_DESTRUCT(&nb.lock);
    nb.constructed = false;
}
