/*
 * MPI_THREAD_MULTIPLE: --threads threads (default 4) each run checked
 * collectives on their own duplicate of MPI_COMM_WORLD at the same time.
 * Threads start at different points of the list, so different collectives,
 * counts and roots overlap; any state an implementation shares between
 * communicators (scratch buffers, pools, counters) is exercised concurrently.
 */
#include "collcheck.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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

typedef struct {
    int id;
    int iterations;
    cc_comm comm;
    pthread_t thread;
} worker;

static size_t step_count(const cc_type *t, size_t variant)
{
    switch (variant % 5) {
        case 0:
            return 0;
        case 1:
            return 1;
        case 2:
            return 7;
        case 3:
            return CC_SMALL_COUNT_MAX;
        default: /* one element past a segment */
            return cc_opts.segment_bytes / t->extent + 1;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    const int p = w->comm.size;
    for (int it = 0; it < w->iterations; it++) {
        for (size_t k = 0; k < NSTEPS; k++) {
            size_t s = (k + (size_t)w->id) % NSTEPS;
            const cc_step_kind *st = &steps[s];
            if (!cc_coll_selected(st->coll)) {
                continue;
            }
            const cc_type *t = cc_type_by_name(st->type);
            size_t variant = (size_t)it + (size_t)w->id + k;
            uint64_t parts[] = {(uint64_t)w->id, (uint64_t)it, s};
            uint64_t salt = cc_case_salt(3, parts);
            int root = (int)(variant % (size_t)p);
            bool in_place = (variant / 5) % 2 == 1;
            cc_run_step(&w->comm, st, step_count(t, variant), root, in_place, salt, w->id);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (cc_init(&argc, &argv, MPI_THREAD_MULTIPLE, NULL)) {
        int iterations = cc_opts.iterations;
        if (iterations == 0) {
            iterations =
                cc_opts.level == CC_LEVEL_FULL ? 40 : (cc_opts.level == CC_LEVEL_QUICK ? 10 : 3);
        }
        const int nthreads = cc_opts.threads;
        worker *workers = cc_xmalloc(sizeof(worker) * (size_t)nthreads);
        /* Communicator creation is collective: done in order, by one thread. */
        for (int i = 0; i < nthreads; i++) {
            workers[i].id = i;
            workers[i].iterations = iterations;
            cc_comm_create(CC_COMM_DUP, &workers[i].comm);
        }
        cc_bufpool_snapshot before;
        cc_bufpool_snapshot_take(&before);
        double t0 = MPI_Wtime();
        for (int i = 0; i < nthreads; i++) {
            if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
                fprintf(stderr, "test_coll_threads: pthread_create failed for thread %d\n", i);
                MPI_Abort(MPI_COMM_WORLD, 6);
            }
        }
        for (int i = 0; i < nthreads; i++) {
            pthread_join(workers[i].thread, NULL);
        }
        if (cc_opts.verbose && cc_world_rank == 0) {
            printf("%d threads x %d iterations x %zu collectives: %.2f s\n", nthreads, iterations,
                   NSTEPS, MPI_Wtime() - t0);
        }
        unsigned used = 0;
        for (size_t k = 0; k < NSTEPS; k++) {
            used |= 1u << steps[k].coll;
        }
        cc_bufpool_expect_growth(&before, used & cc_opts.coll_mask);
        for (int i = 0; i < nthreads; i++) {
            cc_comm_free(&workers[i].comm);
        }
        free(workers);
    }
    return cc_finish("test_coll_threads");
}
