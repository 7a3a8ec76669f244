/*
 * The nonblocking and persistent forms of every collcheck case: a case
 * in flight (cc_pending), its completion by each MPI completion call, and
 * the persistent request's second start, which must give the same bytes
 * as the first.
 */
#include "collcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const form_names[CC_NFORMS] = {
    [CC_FORM_BLOCKING] = "blocking",
    [CC_FORM_NONBLOCKING] = "nonblocking",
    [CC_FORM_PERSISTENT] = "persistent",
};

const char *cc_form_name(cc_form form)
{
    return form_names[form];
}

cc_pending *cc_pending_new(cc_form form, const cc_case *c, cc_buffer *recv,
                           void (*finish)(cc_pending *p), void *kind)
{
    cc_pending *p = cc_xmalloc(sizeof(*p));
    memset(p, 0, sizeof(*p));
    p->form = form;
    p->req = MPI_REQUEST_NULL;
    p->c = c;
    p->recv = recv;
    p->finish = finish;
    p->kind = kind;
    if (form == CC_FORM_PERSISTENT && recv != NULL) {
        /* What the second start must find again (in-place inputs too). */
        p->snapshot = cc_xmalloc(recv->bytes + 2 * CC_GUARD_BYTES);
        memcpy(p->snapshot, recv->base, recv->bytes + 2 * CC_GUARD_BYTES);
    }
    return p;
}

static const char *call_name(const cc_pending *p)
{
    static const char *const suffix[CC_NFORMS] = {"", " (nonblocking)", " (persistent init)"};
    static _Thread_local char name[96];
    snprintf(name, sizeof(name), "%s%s", cc_coll_mpi_name(p->c->coll), suffix[p->form]);
    return name;
}

bool cc_persistent_defer_start;

void cc_pending_issued(cc_pending *p, int err)
{
    cc_check_mpi(p->c, err, call_name(p));
    if (p->form == CC_FORM_PERSISTENT && !cc_persistent_defer_start) {
        cc_check_mpi(p->c, MPI_Start(&p->req), "MPI_Start");
    }
}

void cc_pending_complete(cc_pending *p, unsigned how)
{
    if (p->form == CC_FORM_BLOCKING) {
        return;
    }
    int err = MPI_SUCCESS, flag = 0, index = -1;
    MPI_Status status;
    switch (how % 4) {
        case 0:
            err = MPI_Wait(&p->req, &status);
            break;
        case 1:
            while (err == MPI_SUCCESS && !flag) {
                err = MPI_Test(&p->req, &flag, &status);
            }
            break;
        case 2:
            err = MPI_Waitany(1, &p->req, &index, &status);
            if (err == MPI_SUCCESS && index != 0) {
                cc_fail(p->c, "MPI_Waitany returned index %d for its one request", index);
            }
            break;
        default:
            err = MPI_Waitall(1, &p->req, &status);
            break;
    }
    cc_check_mpi(p->c, err, "completing the request");
    if (p->form == CC_FORM_NONBLOCKING && p->req != MPI_REQUEST_NULL) {
        cc_fail(p->c, "the completed nonblocking request was not freed (not MPI_REQUEST_NULL)");
    }
}

/* Persistent: start again on the restored buffers, compare every byte with
 * the first run's, then free. */
static void persistent_again(cc_pending *p)
{
    if (p->req == MPI_REQUEST_NULL) {
        cc_fail(p->c, "the persistent request became MPI_REQUEST_NULL when it completed");
        return;
    }
    unsigned char *first = NULL;
    size_t bytes = 0;
    if (p->recv != NULL) {
        bytes = p->recv->bytes + 2 * CC_GUARD_BYTES;
        first = cc_xmalloc(bytes);
        memcpy(first, p->recv->base, bytes);
        memcpy(p->recv->base, p->snapshot, bytes);
    }
    cc_check_mpi(p->c, MPI_Start(&p->req), "MPI_Start (second)");
    cc_check_mpi(p->c, MPI_Wait(&p->req, MPI_STATUS_IGNORE), "MPI_Wait (second start)");
    if (first != NULL) {
        cc_check_unchanged(p->c, first, p->recv->base, bytes,
                           "receive buffer of the second start (against the first)");
        free(first);
    }
    cc_check_mpi(p->c, MPI_Request_free(&p->req), "MPI_Request_free");
    if (p->req != MPI_REQUEST_NULL) {
        cc_fail(p->c, "MPI_Request_free left the request set");
    }
}

void cc_pending_finish(cc_pending *p)
{
    if (p->form == CC_FORM_PERSISTENT) {
        persistent_again(p);
    }
    p->finish(p);
    free(p->snapshot);
    free(p);
}

void cc_pending_run(cc_pending *p, uint64_t salt)
{
    if (p == NULL) {
        return;
    }
    cc_pending_complete(p, (unsigned)(salt >> 7));
    cc_pending_finish(p);
}
