/*
 * Every collective coll/bufpool implements, on buffers from MPI_Alloc_mem
 * with the mpool=regpar hint, in rounds over 1K..8M, each result checked
 * against a reference computed locally (integers: exact).  Prints, per rank,
 * the regpar counters that the transport-registration checks compare with
 * the transport's own (rcache_grdma_print_stats, or an LD_PRELOAD counter):
 *
 *   reg_transport: rank R slabs S live_slabs L btl_live B ucx_live U mtl_live M
 *                  btl_made ... ucx_made ... mtl_made ... calls C ms T
 *
 *   test_reg_transport [ROUNDS] [MAXBYTES] [plain|pool] [COLLECTIVE]
 * plain: buffers from malloc instead of the pool (Open MPI's default path);
 * COLLECTIVE (allreduce, reduce_scatter_block, reduce, bcast, allgather,
 * gather, scatter) runs that one only (the benchmark counts per collective).
 * Exit status 0 when every result is right.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvar_util.h"

static unsigned long long pvar(const char *name)
{
    unsigned long long v = 0;
    (void)pvar_util_read(name, &v);
    return v;
}

/* Locked bytes of this process (VmLck), or 0. */
static unsigned long long vmlck_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "VmLck: %llu kB", &kb)) {
            break;
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return kb * 1024;
}

static void *get(size_t bytes, int plain, MPI_Info info)
{
    void *p = NULL;
    if (plain) {
        p = malloc(bytes);
    } else if (MPI_SUCCESS != MPI_Alloc_mem((MPI_Aint)bytes, info, &p)) {
        p = NULL;
    }
    if (NULL == p) {
        fprintf(stderr, "test_reg_transport: no memory for %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void put(void *p, int plain)
{
    if (plain) {
        free(p);
    } else {
        MPI_Free_mem(p);
    }
}

/* 1K, 4K, 16K ... and maxbytes itself last (8M by default). */
static size_t next_size(size_t bytes, size_t maxbytes)
{
    return bytes < maxbytes && bytes * 4 > maxbytes ? maxbytes : bytes * 4;
}

static int want(const char *only, const char *name)
{
    return NULL == only || 0 == strcmp(only, name);
}

static int value(int rank, size_t i)
{
    return (int)((rank + 1) * 131 + i % 1009);
}

/* The reference of a sum reduction at element i. */
static int sum_over_ranks(int np, size_t i)
{
    long s = 0;
    for (int q = 0; q < np; q++) {
        s += value(q, i);
    }
    return (int)s;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    size_t maxbytes = argc > 2 ? (size_t)atol(argv[2]) : (size_t)8 << 20;
    int plain = argc > 3 && 0 == strcmp(argv[3], "plain");
    const char *only = argc > 4 ? argv[4] : NULL;
    int rank, np, bad = 0;
    long calls = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpool_hints", "mpool=regpar");

    /* Counters count from the first read: read them all now. */
    (void)pvar_util_init();
    static const char *const counters[] = {
        "mpool_regpar_slabs_mapped",          "mpool_regpar_slabs_released",
        "mpool_regpar_reg_btl_registrations", "mpool_regpar_reg_ucx_registrations",
        "mpool_regpar_reg_mtl_registrations", "mpool_regpar_reg_regions",
        "mpool_regpar_outside_registrations"};
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        (void)pvar(counters[i]);
    }
    double t0 = MPI_Wtime();
    for (int r = 0; r < rounds; r++) {
        for (size_t bytes = 1024; bytes <= maxbytes; bytes = next_size(bytes, maxbytes)) {
            size_t n = bytes / sizeof(int), blk = n / (size_t)np;
            int *in = get(bytes, plain, info), *out = get(bytes * (size_t)np, plain, info);
            for (size_t i = 0; i < n; i++) {
                in[i] = value(rank, i);
            }
            /* allreduce */
            if (want(only, "allreduce")) {
                MPI_Allreduce(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                for (size_t i = 0; i < n; i++) {
                    bad += out[i] != sum_over_ranks(np, i);
                }
                calls++;
            }
            /* reduce_scatter_block */
            if (want(only, "reduce_scatter_block")) {
                MPI_Reduce_scatter_block(in, out, (int)blk, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                for (size_t i = 0; i < blk; i++) {
                    bad += out[i] != sum_over_ranks(np, (size_t)rank * blk + i);
                }
                calls++;
            }
            /* reduce */
            if (want(only, "reduce")) {
                MPI_Reduce(in, out, (int)n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
                for (size_t i = 0; 0 == rank && i < n; i++) {
                    bad += out[i] != sum_over_ranks(np, i);
                }
                calls++;
            }
            /* bcast */
            if (want(only, "bcast")) {
                memcpy(out, in, bytes);
                MPI_Bcast(out, (int)n, MPI_INT, 0, MPI_COMM_WORLD);
                for (size_t i = 0; i < n; i++) {
                    bad += out[i] != value(0, i);
                }
                calls++;
            }
            /* allgather */
            if (want(only, "allgather")) {
                MPI_Allgather(in, (int)n, MPI_INT, out, (int)n, MPI_INT, MPI_COMM_WORLD);
                for (int q = 0; q < np; q++) {
                    for (size_t i = 0; i < n; i++) {
                        bad += out[(size_t)q * n + i] != value(q, i);
                    }
                }
                calls++;
            }
            /* gather */
            if (want(only, "gather")) {
                MPI_Gather(in, (int)n, MPI_INT, out, (int)n, MPI_INT, 0, MPI_COMM_WORLD);
                for (int q = 0; 0 == rank && q < np; q++) {
                    for (size_t i = 0; i < n; i++) {
                        bad += out[(size_t)q * n + i] != value(q, i);
                    }
                }
                calls++;
            }
            /* scatter: root 0 sends block q of its in-buffer to rank q */
            if (want(only, "scatter")) {
                MPI_Scatter(in, (int)blk, MPI_INT, out, (int)blk, MPI_INT, 0, MPI_COMM_WORLD);
                for (size_t i = 0; i < blk; i++) {
                    bad += out[i] != value(0, (size_t)rank * blk + i);
                }
                calls++;
            }
            put(in, plain);
            put(out, plain);
        }
    }
    double ms = (MPI_Wtime() - t0) * 1e3;

    unsigned long long slabs = pvar("mpool_regpar_slabs_mapped"),
                       released = pvar("mpool_regpar_slabs_released");
    printf("reg_transport: rank %d slabs %llu live_slabs %llu bytes_held %llu btl_live %llu "
           "ucx_live %llu "
           "mtl_live %llu vmlck %llu btl_made %llu ucx_made %llu mtl_made %llu reg_regions %llu "
           "outside_live %llu outside_made %llu calls %ld "
           "ms %.1f bad %d\n",
           rank, slabs, slabs - released, pvar("mpool_regpar_bytes_held"),
           pvar("mpool_regpar_reg_btl_live"), pvar("mpool_regpar_reg_ucx_live"),
           pvar("mpool_regpar_reg_mtl_live"), vmlck_bytes(),
           pvar("mpool_regpar_reg_btl_registrations"), pvar("mpool_regpar_reg_ucx_registrations"),
           pvar("mpool_regpar_reg_mtl_registrations"), pvar("mpool_regpar_reg_regions"),
           pvar("mpool_regpar_outside_registered"), pvar("mpool_regpar_outside_registrations"),
           calls, ms, bad);
    fflush(stdout);
    pvar_util_finalize();
    MPI_Info_free(&info);
    MPI_Finalize();
    return bad ? 1 : 0;
}
