/*
 * Nonblocking and persistent collectives in flight together, every result
 * against the serial reference (collcheck):
 *
 *   round "one-comm"   a dozen MPI_I<coll> of every collective on one
 *                      communicator at once (each with its own tags);
 *   round "comms"      the same spread over five communicators;
 *   round "persistent" a dozen persistent requests on one communicator,
 *                      started together (MPI_Startall);
 *   round "blocking"   nonblocking ones in flight while a blocking
 *                      collective runs on the same communicator;
 *   round "mixed"      nonblocking and persistent interleaved;
 * completed by MPI_Waitall, an MPI_Waitany loop, an MPI_Testsome loop,
 * MPI_Wait in reverse order or an MPI_Testall loop, by turns; counts 0, 1,
 * 7, 1001, a segment plus one and about 1 MiB (rendezvous: a task then
 * yields many times).  With --expect-bufpool, coll_bufpool_nb_tasks_peak
 * must show several bufpool tasks in flight at once.
 *
 * Then what an application may do to a collective in flight: free its
 * communicator, datatype or user operation before it completes (MPI allows
 * it: the operation must complete normally), free a persistent request's
 * datatype and operation between MPI_<Coll>_init and MPI_Start; and what it
 * must not: MPI_Request_free or MPI_Cancel of an active request, which
 * must return an error (and the operation still complete), not hang.
 * And that bufpool's progress callback is registered once for a loop of
 * MPI_Iallreduce + MPI_Wait, and unregistered once idle.
 */
#include "collcheck.h"
#include "pvar_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cc_step_kind steps[] = {
    {CC_ALLREDUCE, "MPI_INT", CC_OP_SUM},
    {CC_BCAST, "MPI_BYTE", CC_OP_SUM},
    {CC_REDUCE, "mat2x2_uint32", CC_OP_USER_MATMUL},
    {CC_ALLGATHER, "struct_i32_f64_i16", CC_OP_SUM},
    {CC_REDUCE_SCATTER, "MPI_DOUBLE", CC_OP_SUM},
    {CC_ALLTOALL, "MPI_INT", CC_OP_SUM},
    {CC_REDUCE_SCATTER_BLOCK, "MPI_UINT32_T", CC_OP_USER_PLUS1},
    {CC_GATHER, "vector3_uint32", CC_OP_SUM},
    {CC_SCAN, "MPI_2INT", CC_OP_MAXLOC},
    {CC_SCATTER, "MPI_DOUBLE", CC_OP_SUM},
    {CC_EXSCAN, "mat2x2_uint32", CC_OP_USER_MATMUL},
    {CC_ALLREDUCE, "vector3_uint32", CC_OP_USER_VEC3},
};
#define NSTEPS (sizeof(steps) / sizeof(steps[0]))
#define NCOMMS 5

static size_t step_count(const cc_type *t, size_t variant, int p)
{
    switch (variant % 6) {
        case 0:
            return 0;
        case 1:
            return 1;
        case 2:
            return 7;
        case 3:
            return CC_SMALL_COUNT_MAX;
        case 4: /* one element past a segment */
            return cc_opts.segment_bytes / t->extent + 1;
        default: /* about 1 MiB in all (alltoall and gathers: per rank) */
            return ((size_t)1 << 20) / t->extent / (size_t)p + 3;
    }
}

/* Complete every pending case, one way or another. */
static void complete_all(cc_pending **pend, int n, unsigned how)
{
    MPI_Request reqs[NSTEPS * 2];
    int err = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        reqs[i] = pend[i]->req;
    }
    const cc_case *c = pend[0]->c;
    switch (how % 5) {
        case 0:
            err = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            break;
        case 1:
            for (int left = n; left > 0 && err == MPI_SUCCESS; left--) {
                int index;
                err = MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
                if (err == MPI_SUCCESS && index == MPI_UNDEFINED) {
                    cc_fail(c, "MPI_Waitany found nothing to wait for with %d left", left);
                    break;
                }
            }
            break;
        case 2: {
            int done = 0, outcount, indices[NSTEPS * 2];
            while (done < n && err == MPI_SUCCESS) {
                err = MPI_Testsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
                if (err == MPI_SUCCESS && outcount == MPI_UNDEFINED) {
                    break;
                }
                done += err == MPI_SUCCESS ? outcount : 0;
            }
            break;
        }
        case 3:
            for (int i = n - 1; i >= 0 && err == MPI_SUCCESS; i--) {
                err = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
            }
            break;
        default: {
            int flag = 0;
            while (!flag && err == MPI_SUCCESS) {
                err = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
            }
            break;
        }
    }
    cc_check_mpi(c, err, "completing several requests");
    for (int i = 0; i < n; i++) {
        pend[i]->req = reqs[i];
    }
}

typedef enum { ROUND_ONE_COMM, ROUND_COMMS, ROUND_PERSISTENT, ROUND_BLOCKING, ROUND_MIXED } round_t;

static void run_round(round_t round, int it, const cc_comm *comms)
{
    cc_pending *pend[NSTEPS];
    int n = 0;
    const int p = comms[0].size;
    /* The persistent round starts its requests together. */
    cc_persistent_defer_start = round == ROUND_PERSISTENT;
    for (size_t k = 0; k < NSTEPS; k++) {
        const cc_step_kind *st = &steps[(k + (size_t)it) % NSTEPS];
        if (!cc_coll_selected(st->coll)) {
            continue;
        }
        const cc_comm *comm = round == ROUND_COMMS ? &comms[k % NCOMMS] : &comms[0];
        const cc_type *t = cc_type_by_name(st->type);
        const size_t variant = k + (size_t)it * 5;
        const cc_form form = round == ROUND_PERSISTENT                      ? CC_FORM_PERSISTENT
                             : round == ROUND_MIXED && (k + (size_t)it) % 2 ? CC_FORM_PERSISTENT
                                                                            : CC_FORM_NONBLOCKING;
        uint64_t parts[] = {(uint64_t)round, (uint64_t)it, k};
        const uint64_t salt = cc_case_salt(3, parts);
        cc_pending *pd = cc_step_start(comm, st, step_count(t, variant, comm->size),
                                       (int)(variant % (size_t)comm->size), (variant / 6) % 2 == 1,
                                       salt, -1, form);
        if (pd != NULL) {
            pend[n++] = pd;
        }
        if (round == ROUND_BLOCKING && k == NSTEPS / 2) {
            /* A blocking collective among nonblocking ones of the same
             * communicator. */
            cc_reduce_case rc = {CC_ALLREDUCE, cc_type_by_name("MPI_INT"),
                                 CC_OP_SUM,    5000 + k,
                                 -1,           false,
                                 salt + 1,     -1};
            cc_pending_run(cc_reduce_start(&comms[0], &rc, CC_FORM_BLOCKING), salt);
        }
    }
    (void)p;
    cc_persistent_defer_start = false;
    if (round == ROUND_PERSISTENT && n > 0) {
        MPI_Request reqs[NSTEPS];
        for (int i = 0; i < n; i++) {
            reqs[i] = pend[i]->req;
        }
        cc_check_mpi(pend[0]->c, MPI_Startall(n, reqs), "MPI_Startall");
        for (int i = 0; i < n; i++) {
            pend[i]->req = reqs[i];
        }
    }
    if (n > 0) {
        complete_all(pend, n, (unsigned)it + (unsigned)round);
    }
    for (int i = 0; i < n; i++) {
        cc_pending_finish(pend[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* Freed while in flight, and requests freed or cancelled while active. */

static void check_sum(const cc_case *c, const int *got, int n, int p, const char *what)
{
    for (int i = 0; i < n; i++) {
        const int expect = p * i + p * (p - 1) / 2;
        if (got[i] != expect) {
            cc_fail(c, "%s: element %d is %d, expected %d", what, i, got[i], expect);
            return;
        }
    }
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    /* On contiguous(2, MPI_INT) elements. */
    for (int i = 0; i < 2 * *len; i++) {
        ((int *)inout)[i] += ((int *)in)[i];
    }
}

static void freed_in_flight(void)
{
    const int p = cc_world_size, me = cc_world_rank, n = 100000;
    int *in = cc_xmalloc(sizeof(int) * (size_t)n), *out = cc_xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        in[i] = me + i;
    }
    cc_comm world;
    cc_comm_wrap(MPI_COMM_WORLD, "world", &world);
    cc_case c = {.coll = CC_ALLREDUCE,
                 .type = "MPI_INT",
                 .op = "MPI_SUM",
                 .count = (size_t)n,
                 .root = -1,
                 .comm = &world,
                 .thread = -1,
                 .form = CC_FORM_NONBLOCKING};
    MPI_Request req;

    /* The communicator. */
    MPI_Comm dup = cc_comm_make(CC_COMM_DUP);
    memset(out, 0, sizeof(int) * (size_t)n);
    cc_check_mpi(&c, MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, dup, &req), "MPI_Iallreduce");
    cc_check_mpi(&c, MPI_Comm_free(&dup), "MPI_Comm_free of the communicator in use");
    cc_check_mpi(&c, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    check_sum(&c, out, n, p, "communicator freed in flight");
    cc_case_done();

    /* A derived datatype and a user operation. */
    MPI_Datatype pair;
    MPI_Op op;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(user_sum, 1, &op);
    memset(out, 0, sizeof(int) * (size_t)n);
    c.type = "contiguous(2, MPI_INT)";
    c.op = "user sum";
    cc_check_mpi(&c, MPI_Iallreduce(in, out, n / 2, pair, op, MPI_COMM_WORLD, &req),
                 "MPI_Iallreduce");
    MPI_Type_free(&pair);
    MPI_Op_free(&op);
    cc_check_mpi(&c, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    check_sum(&c, out, n, p, "datatype and operation freed in flight");
    cc_case_done();

    /* Persistent: both freed between init and the starts. */
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(user_sum, 1, &op);
    c.form = CC_FORM_PERSISTENT;
    cc_check_mpi(
        &c, PCOLL_INIT(Allreduce)(in, out, n / 2, pair, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
        "persistent allreduce init");
    MPI_Type_free(&pair);
    MPI_Op_free(&op);
    for (int k = 0; k < 2; k++) {
        memset(out, 0, sizeof(int) * (size_t)n);
        cc_check_mpi(&c, MPI_Start(&req), "MPI_Start");
        cc_check_mpi(&c, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
        check_sum(&c, out, n, p, "persistent: datatype and operation freed before MPI_Start");
    }
    cc_check_mpi(&c, MPI_Request_free(&req), "MPI_Request_free");
    cc_case_done();
    free(in);
    free(out);
}

/* MPI_Request_free and MPI_Cancel of an active request: an error, and the
 * operation completes.  The other ranks join only after rank 0 has tried,
 * so that its request is still active then. */
static void free_active(cc_form form)
{
    const int p = cc_world_size, me = cc_world_rank, n = 1 << 18;
    int *in = cc_xmalloc(sizeof(int) * (size_t)n), *out = cc_xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        in[i] = me + i;
    }
    cc_comm world;
    cc_comm_wrap(MPI_COMM_WORLD, "world", &world);
    cc_case c = {.coll = CC_ALLREDUCE,
                 .type = "MPI_INT",
                 .op = "MPI_SUM",
                 .count = (size_t)n,
                 .root = -1,
                 .comm = &world,
                 .thread = -1,
                 .form = form};
    MPI_Request req = MPI_REQUEST_NULL;
    int token = 0;
    if (me != 0) {
        MPI_Recv(&token, 1, MPI_INT, 0, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (form == CC_FORM_PERSISTENT) {
        cc_check_mpi(&c,
                     PCOLL_INIT(Allreduce)(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                           MPI_INFO_NULL, &req),
                     "persistent allreduce init");
        cc_check_mpi(&c, MPI_Start(&req), "MPI_Start");
    } else {
        cc_check_mpi(&c, MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req),
                     "MPI_Iallreduce");
    }
    if (me == 0) {
        MPI_Request kept = req;
        int err = MPI_Request_free(&req);
        if (err == MPI_SUCCESS) {
            cc_fail(&c, "MPI_Request_free of an active %s request succeeded", cc_form_name(form));
        } else if (req != kept) {
            cc_fail(&c, "MPI_Request_free failed but changed the request");
            req = kept;
        }
        if (MPI_Cancel(&req) == MPI_SUCCESS) {
            cc_fail(&c, "MPI_Cancel of an active collective request succeeded");
        }
        for (int r = 1; r < p; r++) {
            MPI_Send(&token, 1, MPI_INT, r, 4242, MPI_COMM_WORLD);
        }
    }
    cc_check_mpi(&c, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait after the refused free");
    check_sum(&c, out, n, p, "after MPI_Request_free and MPI_Cancel were refused");
    if (form == CC_FORM_PERSISTENT) {
        cc_check_mpi(&c, MPI_Request_free(&req), "MPI_Request_free of the inactive request");
    }
    cc_case_done();
    free(in);
    free(out);
}

/* The progress callback: registered once for a loop of small nonblocking
 * calls, not at every call, and gone once nothing has been in flight for a
 * while (MPI_Iprobe progresses). */
static void progress_registration(void)
{
    unsigned long long before = 0, after = 0, registered = 1;
    cc_comm world;
    cc_comm_wrap(MPI_COMM_WORLD, "world", &world);
    /* 2 KiB: bufpool's recursive doubling at every size (auto hands 4-8
     * KiB at 2 and 3 processes back). */
    enum { N = 512 };
    cc_case c = {.coll = CC_ALLREDUCE,
                 .type = "MPI_INT",
                 .op = "MPI_SUM",
                 .count = N,
                 .root = -1,
                 .comm = &world,
                 .thread = -1,
                 .form = CC_FORM_NONBLOCKING};
    int in[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i] = cc_world_rank + i;
    }
    const int calls = 200;
    unsigned long long served0 = 0, served1 = 0;
    (void)pvar_util_read("coll_bufpool_iallreduce_calls", &served0);
    /* Idle first, so that the loop starts unregistered. */
    for (int k = 0; k < 5000; k++) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    (void)pvar_util_read("coll_bufpool_nb_progress_registrations", &before);
    for (int k = 0; k < calls; k++) {
        MPI_Request req;
        cc_check_mpi(&c, MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req),
                     "MPI_Iallreduce");
        cc_check_mpi(&c, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    }
    check_sum(&c, out, N, cc_world_size, "progress registration loop");
    (void)pvar_util_read("coll_bufpool_iallreduce_calls", &served1);
    enum pvar_status st = pvar_util_read("coll_bufpool_nb_progress_registrations", &after);
    if (served1 - served0 != (unsigned long long)calls) {
        cc_fail(&c, "bufpool served %llu of the %d MPI_Iallreduce calls", served1 - served0, calls);
    } else if (st != PVAR_OK) {
        cc_fail(&c, "coll_bufpool_nb_progress_registrations: %s", pvar_util_status_string(st));
    } else if (after - before > calls / 10) {
        cc_fail(&c, "the progress callback was registered %llu times for %d calls", after - before,
                calls);
    }
    for (int k = 0; k < 5000; k++) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    st = pvar_util_read("coll_bufpool_nb_progress_registered", &registered);
    if (st != PVAR_OK) {
        cc_fail(&c, "coll_bufpool_nb_progress_registered: %s", pvar_util_status_string(st));
    } else if (registered != 0) {
        cc_fail(&c, "the progress callback is still registered after 5000 idle progress calls");
    } else if (cc_world_rank == 0) {
        printf("progress callback: registered %llu times in %d calls, unregistered when idle\n",
               after - before, calls);
    }
    cc_case_done();
}

int main(int argc, char **argv)
{
    if (cc_init(&argc, &argv, MPI_THREAD_SINGLE, NULL)) {
        cc_print_input_notes();
        int iterations = cc_opts.iterations;
        if (iterations == 0) {
            iterations =
                cc_opts.level == CC_LEVEL_FULL ? 12 : (cc_opts.level == CC_LEVEL_QUICK ? 6 : 3);
        }
        cc_comm comms[NCOMMS];
        cc_comm_create(CC_COMM_WORLD, &comms[0]);
        cc_comm_create(CC_COMM_DUP, &comms[1]);
        cc_comm_create(CC_COMM_HALVES, &comms[2]);
        cc_comm_create(CC_COMM_REVERSED, &comms[3]);
        cc_comm_create(CC_COMM_DUP, &comms[4]);
        cc_bufpool_snapshot before;
        cc_bufpool_snapshot_take(&before);
        for (int it = 0; it < iterations; it++) {
            for (int round = ROUND_ONE_COMM; round <= ROUND_MIXED; round++) {
                double t0 = MPI_Wtime();
                run_round((round_t)round, it, comms);
                if (cc_opts.verbose && cc_world_rank == 0) {
                    printf("iteration %d round %d: %.2f s\n", it, round, MPI_Wtime() - t0);
                }
            }
        }
        cc_bufpool_expect_growth(&before, 1u << CC_ALLREDUCE);
        if (cc_world_size > 1) {
            freed_in_flight();
            free_active(CC_FORM_NONBLOCKING);
            free_active(CC_FORM_PERSISTENT);
        }
        if (1 == cc_opts.expect_bufpool && cc_world_size > 1) {
            unsigned long long peak = 0;
            enum pvar_status st = pvar_util_read("coll_bufpool_nb_tasks_peak", &peak);
            if (st != PVAR_OK) {
                cc_fail(NULL, "coll_bufpool_nb_tasks_peak: %s", pvar_util_status_string(st));
            } else if (peak < 2) {
                cc_fail(NULL,
                        "coll_bufpool_nb_tasks_peak is %llu: bufpool never had two nonblocking "
                        "collectives in flight at once",
                        peak);
            } else if (cc_world_rank == 0) {
                printf("coll_bufpool_nb_tasks_peak: %llu\n", peak);
            }
            progress_registration();
        }
        for (int i = 0; i < NCOMMS; i++) {
            cc_comm_free(&comms[i]);
        }
    }
    return cc_finish("test_coll_nb");
}
