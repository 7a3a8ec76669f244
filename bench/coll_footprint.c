/*
 * coll_footprint: the memory a collective configuration keeps after a burst
 * of large collectives and an idle period.
 *
 * One configuration per job (the collective components are chosen with
 * mpirun's --mca options: memory is counted per process, so two
 * configurations in one job could not be told apart).  Each rank:
 *   1. records its resident and anonymous mapped memory (/proc/self/status
 *      VmRSS, /proc/self/smaps_rollup Anonymous) after MPI_Init and its
 *      own buffers;
 *   2. runs a burst: -n calls of each collective of -c at -s bytes (the
 *      message; per block for allgather, alltoall, gather, scatter), each
 *      result checked;
 *   3. records the memory again, then stays idle for -i seconds the way an
 *      application computing between MPI calls does (one MPI_Test every
 *      100 ms: the progress engine runs, as in any MPI call), and records
 *      it a third time.
 * Printed (rank 0; the most of any rank): the memory above the baseline
 * after the burst and after the idle period, in MiB, and where coll/bufpool
 * and mpool/regpar are loaded their own view (MPI_T: the pool's bytes held
 * and the scratch high-water mark), so that what a configuration keeps can
 * be compared with its cap.
 *
 *   mpirun -np P [--mca ...] coll_footprint [-c LIST] [-s SIZE] [-n CALLS]
 *                                           [-i SECONDS] [-l LABEL]
 *
 * Defaults: allreduce,allgather,bcast,reduce_scatter_block,alltoall,
 * gather,scatter; 64M; 3 calls; 10 s.  One line "footprint LABEL ..." per
 * run for scripts (bench/run-side-by-side.sh --footprint).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvar_util.h"
#include "regpar_size.h"

static int rank, size;

/* kB of a "Name:   N kB" line of a /proc file, or -1. */
static long proc_kb(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    char line[256];
    long kb = -1;
    const size_t len = strlen(name);
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        if (0 == strncmp(line, name, len) && ':' == line[len]) {
            kb = strtol(line + len + 1, NULL, 10);
            break;
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return kb;
}

typedef struct {
    double rss_mib, anon_mib;
} mem_t;

static mem_t mem_now(void)
{
    const long rss = proc_kb("/proc/self/status", "VmRSS");
    long anon = proc_kb("/proc/self/smaps_rollup", "Anonymous");
    return (mem_t){rss / 1024.0, anon < 0 ? -1 : anon / 1024.0};
}

/* The most of any rank. */
static mem_t mem_max(mem_t m)
{
    mem_t out;
    MPI_Allreduce(&m, &out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

static unsigned long long pvar_or_zero(const char *name, int *found)
{
    unsigned long long v = 0;
    if (PVAR_OK == pvar_util_read(name, &v)) {
        *found = 1;
    }
    return v;
}

/* One call of coll on n bytes (per block), checked; the number of wrong
 * elements. */
static long burst_call(const char *coll, size_t n, char *a, char *b)
{
    const int count = (int)(n / sizeof(float));
    long bad = 0;
    for (size_t i = 0; i < n * (size_t)size / sizeof(float); i++) {
        ((float *)a)[i] = (float)((rank + i) % 7);
    }
    if (0 == strcmp(coll, "allreduce")) {
        MPI_Allreduce(a, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < count; i += 4093) {
            float want = 0;
            for (int r = 0; r < size; r++) {
                want += (float)((r + (size_t)i) % 7);
            }
            bad += ((float *)b)[i] != want;
        }
    } else if (0 == strcmp(coll, "bcast")) {
        MPI_Bcast(a, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        for (int i = 0; i < count; i += 4093) {
            bad += ((float *)a)[i] != (float)((size_t)i % 7);
        }
    } else if (0 == strcmp(coll, "allgather")) {
        MPI_Allgather(a, count, MPI_FLOAT, b, count, MPI_FLOAT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++) {
            bad += ((float *)b)[(size_t)r * count] != (float)(r % 7);
        }
    } else if (0 == strcmp(coll, "reduce_scatter_block")) {
        const int block = count / size;
        MPI_Reduce_scatter_block(a, b, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        float want = 0;
        for (int r = 0; r < size; r++) {
            want += (float)((r + (size_t)rank * block) % 7);
        }
        bad += block > 0 && ((float *)b)[0] != want;
    } else if (0 == strcmp(coll, "alltoall")) {
        MPI_Alltoall(a, count, MPI_FLOAT, b, count, MPI_FLOAT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++) {
            bad += ((float *)b)[(size_t)r * count] != (float)((r + (size_t)rank * count) % 7);
        }
    } else if (0 == strcmp(coll, "gather")) {
        MPI_Gather(a, count, MPI_FLOAT, b, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        for (int r = 0; 0 == rank && r < size; r++) {
            bad += ((float *)b)[(size_t)r * count] != (float)(r % 7);
        }
    } else if (0 == strcmp(coll, "scatter")) {
        MPI_Scatter(a, count, MPI_FLOAT, b, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        bad += ((float *)b)[0] != (float)(((size_t)rank * count) % 7);
    } else {
        return -1;
    }
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *colls = "allreduce,allgather,bcast,reduce_scatter_block,alltoall,gather,scatter";
    const char *label = "run";
    uint64_t bytes = 64u << 20;
    int calls = 3, idle = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        char err[64];
        if (0 == strcmp(argv[i], "-c")) {
            colls = argv[i + 1];
        } else if (0 == strcmp(argv[i], "-s")) {
            if (0 != regpar_parse_size(argv[i + 1], &bytes, err, sizeof(err)) || bytes < 4096) {
                if (0 == rank) {
                    fprintf(stderr, "coll_footprint: -s %s: %s\n", argv[i + 1], err);
                }
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else if (0 == strcmp(argv[i], "-n")) {
            calls = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-i")) {
            idle = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-l")) {
            label = argv[i + 1];
        } else {
            if (0 == rank) {
                fprintf(stderr,
                        "coll_footprint: unknown option %s (see the comment at the top "
                        "of bench/coll_footprint.c)\n",
                        argv[i]);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    (void)pvar_util_init();
    /* Both buffers hold p blocks (allgather, alltoall, gather); touched now
     * so that the baseline counts them. */
    const size_t buf_bytes = (size_t)bytes * (size_t)size;
    char *a = malloc(buf_bytes), *b = malloc(buf_bytes);
    if (NULL == a || NULL == b) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(a, 1, buf_bytes);
    memset(b, 1, buf_bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    const mem_t base = mem_max(mem_now());

    long bad = 0;
    char *list = strdup(colls);
    for (char *save = NULL, *c = strtok_r(list, ",", &save); NULL != c;
         c = strtok_r(NULL, ",", &save)) {
        for (int k = 0; k < calls; k++) {
            long wrong = burst_call(c, (size_t)bytes, a, b);
            if (wrong < 0) {
                if (0 == rank) {
                    fprintf(stderr, "coll_footprint: unknown collective %s\n", c);
                }
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            bad += wrong;
        }
    }
    free(list);
    MPI_Barrier(MPI_COMM_WORLD);
    const mem_t burst = mem_max(mem_now());

    /* Idle: computing, with an MPI call every 100 ms. */
    MPI_Request req;
    int dummy = 0, flag;
    MPI_Irecv(&dummy, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_SELF, &req);
    for (int t = 0; t < idle * 10; t++) {
        usleep(100 * 1000);
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    const mem_t after = mem_max(mem_now());

    int have_pool = 0, have_coll = 0;
    unsigned long long held = pvar_or_zero("mpool_regpar_bytes_held", &have_pool);
    unsigned long long peak = pvar_or_zero("mpool_regpar_bytes_peak", &have_pool);
    unsigned long long scratch = pvar_or_zero("coll_bufpool_scratch_bytes_peak", &have_coll);
    unsigned long long mine[3] = {held, peak, scratch}, most[3];
    MPI_Reduce(mine, most, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    long all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("# coll_footprint %s: %d ranks, %s of %llu bytes x %d calls, %d s idle; MiB above "
               "the baseline (rss %.1f, anon %.1f MiB), the most of any rank\n",
               label, size, colls, (unsigned long long)bytes, calls, idle, base.rss_mib,
               base.anon_mib);
        printf("footprint %s ranks=%d rss_burst=%.1f rss_idle=%.1f anon_burst=%.1f anon_idle=%.1f "
               "pool_held=%.1f pool_peak=%.1f scratch_peak=%.1f check=%s\n",
               label, size, burst.rss_mib - base.rss_mib, after.rss_mib - base.rss_mib,
               burst.anon_mib - base.anon_mib, after.anon_mib - base.anon_mib,
               have_pool ? most[0] / 1048576.0 : -1.0, have_pool ? most[1] / 1048576.0 : -1.0,
               have_coll ? most[2] / 1048576.0 : -1.0, 0 == all_bad ? "ok" : "FAILED");
    }
    pvar_util_finalize();
    free(a);
    free(b);
    MPI_Finalize();
    return 0 == all_bad ? 0 : 1;
}
