/*
 * MPI_Alloc_mem with the hint mpool_hints=mpool=regpar must return pool
 * memory that holds data, can be sent and received, and goes back to the
 * pool with MPI_Free_mem.  The pool's MPI_T counters prove who served it.
 *
 * Usage: test_mpool_alloc_mem [--no-pool | --idle-collect SECONDS]
 *   --no-pool   the regpar component is expected to be absent or unusable
 *               (the allocations must still work, from Open MPI's default
 *               allocator, and the counters must not move).
 *   --idle-collect SECONDS  then stay idle for SECONDS the way an application
 *               computing between MPI calls does (an MPI_Test every 100 ms)
 *               and check that the pool released its free slabs meanwhile:
 *               run with mpool_regpar_gc_age well below SECONDS.  The
 *               collection runs from the progress engine, which such an
 *               application calls rarely.
 */
#include <unistd.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvar_util.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", rank, __FILE__, __LINE__,        \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int rank, size;

static unsigned char pattern(int owner, size_t i)
{
    return (unsigned char)((owner * 131u + i * 7u + (i >> 12)) & 0xff);
}

static unsigned long long counter(const char *name)
{
    unsigned long long v = 0;
    enum pvar_status st = pvar_util_read(name, &v);
    return PVAR_OK == st ? v : ~0ull;
}

int main(int argc, char **argv)
{
    int expect_pool = !(argc > 1 && 0 == strcmp(argv[1], "--no-pool"));
    int idle_collect = argc > 2 && 0 == strcmp(argv[1], "--idle-collect") ? atoi(argv[2]) : 0;
    /* Sizes around every boundary the pool cares about: a page, the default
     * smallest bucket, a non-power-of-two, and above the largest bucket
     * (64M: a direct mapping). */
    const size_t sizes[] = {1,
                            100,
                            4095,
                            4096,
                            4097,
                            65536,
                            1000000,
                            (size_t)3 << 20,
                            (size_t)64 << 20,
                            ((size_t)64 << 20) + 1};
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(PVAR_OK == pvar_util_init(), "MPI_T init");

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpool_hints", "mpool=regpar");

    /* MPI_T counters count from the moment their handle starts: these first
     * reads start them, and later reads are deltas. */
    unsigned long long allocs0 = counter("mpool_regpar_allocs");
    unsigned long long frees0 = counter("mpool_regpar_frees");
    unsigned long long direct0 = counter("mpool_regpar_direct_allocs");
    if (expect_pool) {
        CHECK(~0ull != allocs0, "pvar mpool_regpar_allocs not found: is the component loaded?");
    }

    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (size_t s = 0; s < nsizes; s++) {
        size_t n = sizes[s];
        unsigned char *mine = NULL, *theirs = NULL;
        CHECK(MPI_SUCCESS == MPI_Alloc_mem((MPI_Aint)n, info, &mine), "alloc %zu", n);
        CHECK(MPI_SUCCESS == MPI_Alloc_mem((MPI_Aint)n, info, &theirs), "alloc %zu", n);
        if (NULL == mine || NULL == theirs) {
            break;
        }
        /* Pool memory is page aligned. */
        if (expect_pool) {
            CHECK(0 == ((uintptr_t)mine & 4095), "alignment of %p", (void *)mine);
        }
        for (size_t i = 0; i < n; i++) {
            mine[i] = pattern(rank, i);
        }
        memset(theirs, 0, n);
        /* Through the network path, in pieces of at most 1 GiB. */
        MPI_Sendrecv(mine, (int)n, MPI_BYTE, right, 7, theirs, (int)n, MPI_BYTE, left, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            bad += theirs[i] != pattern(left, i);
        }
        CHECK(0 == bad, "%zu wrong bytes of %zu received into pool memory", bad, n);
        for (size_t i = 0; i < n; i++) {
            bad += mine[i] != pattern(rank, i);
        }
        CHECK(0 == bad, "%zu bytes of %zu changed in the sent buffer", bad, n);
        CHECK(MPI_SUCCESS == MPI_Free_mem(mine), "free %zu", n);
        CHECK(MPI_SUCCESS == MPI_Free_mem(theirs), "free %zu", n);
    }

    /* A zero-byte request is legal and returns NULL in Open MPI. */
    void *nothing = (void *)1;
    CHECK(MPI_SUCCESS == MPI_Alloc_mem(0, info, &nothing), "alloc 0");
    if (NULL != nothing) {
        MPI_Free_mem(nothing);
    }

    unsigned long long allocs = counter("mpool_regpar_allocs") - allocs0;
    unsigned long long frees = counter("mpool_regpar_frees") - frees0;
    unsigned long long in_use = counter("mpool_regpar_bytes_in_use");
    unsigned long long direct = counter("mpool_regpar_direct_allocs") - direct0;
    if (expect_pool) {
        CHECK(2 * nsizes == allocs, "pool served %llu allocations, expected %zu", allocs,
              2 * nsizes);
        CHECK(allocs == frees, "allocations %llu != frees %llu", allocs, frees);
        CHECK(0 == in_use, "%llu bytes still in use after every MPI_Free_mem", in_use);
        CHECK(direct >= 2, "sizes above bucket_max must be direct mappings (got %llu)", direct);
    } else {
        CHECK(0 == allocs || ~0ull == counter("mpool_regpar_allocs"),
              "the pool served %llu allocations although it should be unusable", allocs);
    }

    /* The collectives still compute right whatever the parameters (the bad
     * parameter test relies on this): a small and a pipelined allreduce. */
    for (int n = 7; n <= (1 << 20); n *= 1024) {
        int *v = malloc((size_t)n * sizeof(int));
        for (int i = 0; i < n; i++) {
            v[i] = rank + i % 1000;
        }
        MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        size_t bad = 0;
        for (int i = 0; i < n; i++) {
            bad += v[i] != size * (size - 1) / 2 + size * (i % 1000);
        }
        CHECK(0 == bad, "MPI_Allreduce of %d ints: %zu wrong", n, bad);
        free(v);
    }

    if (expect_pool && idle_collect > 0) {
        unsigned long long held = counter("mpool_regpar_bytes_held");
        unsigned long long collected0 = counter("mpool_regpar_bytes_collected");
        CHECK(held > 0 && ~0ull != held, "nothing held before the idle period (%llu)", held);
        MPI_Request req;
        int dummy = 0, flag;
        MPI_Irecv(&dummy, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_SELF, &req);
        const double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < idle_collect) {
            usleep(100 * 1000);
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        }
        /* read before any further MPI call could make progress */
        unsigned long long after = counter("mpool_regpar_bytes_held");
        unsigned long long collected = counter("mpool_regpar_bytes_collected") - collected0;
        MPI_Cancel(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(0 == after,
              "%llu of %llu bytes still held after %d s idle with an MPI_Test every "
              "100 ms (collected %llu)",
              after, held, idle_collect, collected);
        CHECK(collected >= held, "collected %llu bytes of %llu", collected, held);
    }

    MPI_Info_free(&info);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_mpool_alloc_mem: %s (%d failure(s) over %d ranks)\n",
               total ? "FAILED" : "passed", total, size);
    }
    pvar_util_finalize();
    MPI_Finalize();
    return total ? 1 : 0;
}
