/*
 * coll_footprint: the memory a collective configuration keeps after a burst
 * of large collectives and an idle period.
 *
 * One configuration per job (the collective components are chosen with
 * mpirun's --mca options: memory is counted per process, so two
 * configurations in one job could not be told apart).  Each rank:
 *   1. records its resident and anonymous memory (/proc/self/status VmRSS,
 *      /proc/self/smaps_rollup Anonymous) after MPI_Init and its own
 *      buffers: the baseline;
 *   2. runs a burst: -n calls of each collective of -c at -s bytes (the
 *      message; per block for allgather, alltoall, gather, scatter), each
 *      result checked;
 *   3. records the memory again, then stays idle the way an application
 *      computing between MPI calls does (one MPI_Test every 100 ms: the
 *      progress engine runs, as in any MPI call), and records it at each
 *      checkpoint of -i (seconds since the burst ended).
 * Printed (rank 0; the most of any rank): one line per moment (after the
 * burst, then each checkpoint) with the memory above the baseline in MiB
 * and, where coll/bufpool and mpool/regpar are loaded, their own view
 * through MPI_T: the pool's bytes held at that moment against its cap
 * (mpool_regpar_max_capacity), the pool's and bufpool's scratch high-water
 * marks.  -v adds, for rank 0, the mappings whose resident size grew most
 * between the baseline and the last checkpoint (/proc/self/smaps): where the
 * kept memory lives (heap, an anonymous mapping, a shared-memory file).
 *
 *   mpirun -np P [--mca ...] coll_footprint [-c LIST] [-s SIZE] [-n CALLS]
 *                                           [-i SECONDS[,SECONDS...]]
 *                                           [-l LABEL] [-v 1]
 *
 * Defaults: allreduce,allgather,bcast,reduce_scatter_block,alltoall,
 * gather,scatter; 64M; 3 calls; 10 s.  Lines "footprint LABEL at=burst|Ns
 * ..." are for scripts (bench/run-side-by-side.sh --footprint).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cvar_value.h"
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

/* The most of any rank, of each figure above the rank's own baseline. */
static mem_t mem_max_above(mem_t m, mem_t base)
{
    double mine[2] = {m.rss_mib - base.rss_mib, m.anon_mib - base.anon_mib}, out[2];
    MPI_Allreduce(mine, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return (mem_t){out[0], out[1]};
}

/* Mappings of /proc/self/smaps: address range, name and resident kB. */
typedef struct {
    unsigned long start, end;
    char name[96];
    long rss_kb;
} mapping_t;

static int smaps_read(mapping_t *maps, int max)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int n = -1;
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        unsigned long a, b;
        int off = 0;
        if (2 == sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &a, &b, &off) && off > 0) {
            if (n + 1 >= max) {
                break;
            }
            n++;
            maps[n].start = a;
            maps[n].end = b;
            maps[n].rss_kb = 0;
            char *name = line + off;
            name[strcspn(name, "\n")] = '\0';
            snprintf(maps[n].name, sizeof(maps[n].name), "%s", '\0' == *name ? "[anon]" : name);
        } else if (n >= 0 && 0 == strncmp(line, "Rss:", 4)) {
            maps[n].rss_kb = strtol(line + 4, NULL, 10);
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return n + 1;
}

/* Rank 0: the mappings whose resident size grew most since the baseline. */
static void smaps_growth(const mapping_t *before, int nb, const mapping_t *after, int na)
{
    long best[5] = {0};
    int which[5] = {-1, -1, -1, -1, -1};
    for (int i = 0; i < na; i++) {
        long was = 0;
        for (int j = 0; j < nb; j++) {
            if (before[j].start == after[i].start && before[j].end == after[i].end) {
                was = before[j].rss_kb;
                break;
            }
        }
        long grew = after[i].rss_kb - was;
        for (int k = 0; k < 5; k++) {
            if (grew > best[k]) {
                for (int m = 4; m > k; m--) {
                    best[m] = best[m - 1];
                    which[m] = which[m - 1];
                }
                best[k] = grew;
                which[k] = i;
                break;
            }
        }
    }
    for (int k = 0; k < 5 && which[k] >= 0; k++) {
        const mapping_t *m = &after[which[k]];
        printf("# coll_footprint rank 0: +%.1f MiB resident in %lx-%lx (%.1f MiB mapped) %s\n",
               best[k] / 1024.0, m->start, m->end, (m->end - m->start) / 1048576.0, m->name);
    }
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

#define MAX_CHECKPOINTS 8
#define MAX_MAPPINGS    4096

/* One moment's line: memory above the baseline and the pool's view. */
static void report(const char *label, const char *at, mem_t above, double cap)
{
    int have_pool = 0, have_coll = 0;
    unsigned long long held = pvar_or_zero("mpool_regpar_bytes_held", &have_pool);
    unsigned long long peak = pvar_or_zero("mpool_regpar_bytes_peak", &have_pool);
    unsigned long long scratch = pvar_or_zero("coll_bufpool_scratch_bytes_peak", &have_coll);
    unsigned long long mine[3] = {held, peak, scratch}, most[3];
    MPI_Reduce(mine, most, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("footprint %s at=%s ranks=%d rss=%.1f anon=%.1f pool_held=%.1f pool_peak=%.1f "
               "pool_cap=%.1f scratch_peak=%.1f\n",
               label, at, size, above.rss_mib, above.anon_mib,
               have_pool ? most[0] / 1048576.0 : -1.0, have_pool ? most[1] / 1048576.0 : -1.0,
               cap >= 0 ? cap / 1048576.0 : -1.0, have_coll ? most[2] / 1048576.0 : -1.0);
        fflush(stdout);
    }
}

/* Long on purpose: the benchmark's one sequence (options, baseline, each
 * configuration's calls, the table), read top to bottom. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *colls = "allreduce,allgather,bcast,reduce_scatter_block,alltoall,gather,scatter";
    const char *label = "run";
    uint64_t bytes = 64u << 20;
    int calls = 3, verbose = 0;
    int checkpoints[MAX_CHECKPOINTS] = {10}, ncheck = 1;
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
            /* ascending seconds since the burst, comma separated */
            char *list = strdup(argv[i + 1]);
            ncheck = 0;
            for (char *save = NULL, *t = strtok_r(list, ",", &save); NULL != t;
                 t = strtok_r(NULL, ",", &save)) {
                int sec = atoi(t);
                if (ncheck == MAX_CHECKPOINTS || sec < 0 ||
                    (ncheck > 0 && sec <= checkpoints[ncheck - 1])) {
                    if (0 == rank) {
                        fprintf(stderr,
                                "coll_footprint: -i %s: at most %d ascending seconds "
                                "(e.g. 10,15)\n",
                                argv[i + 1], MAX_CHECKPOINTS);
                    }
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
                checkpoints[ncheck++] = sec;
            }
            free(list);
        } else if (0 == strcmp(argv[i], "-l")) {
            label = argv[i + 1];
        } else if (0 == strcmp(argv[i], "-v")) {
            verbose = atoi(argv[i + 1]);
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
    const double cap = cvar_value("mpool_regpar_max_capacity");
    /* Both buffers hold p blocks (allgather, alltoall, gather); touched now
     * so that the baseline counts them. */
    const size_t buf_bytes = (size_t)bytes * (size_t)size;
    char *a = malloc(buf_bytes), *b = malloc(buf_bytes);
    mapping_t *maps_before = verbose ? calloc(MAX_MAPPINGS, sizeof(mapping_t)) : NULL;
    mapping_t *maps_after = verbose ? calloc(MAX_MAPPINGS, sizeof(mapping_t)) : NULL;
    if (NULL == a || NULL == b || (verbose && (NULL == maps_before || NULL == maps_after))) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(a, 1, buf_bytes);
    memset(b, 1, buf_bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    const mem_t base = mem_now();
    double base_most[2] = {base.rss_mib, base.anon_mib}, base_out[2];
    MPI_Reduce(base_most, base_out, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    const int nbefore = verbose ? smaps_read(maps_before, MAX_MAPPINGS) : 0;
    if (0 == rank) {
        printf("# coll_footprint %s: %d ranks, %s of %llu bytes x %d calls, then idle with an "
               "MPI_Test every 100 ms; MiB above each rank's baseline (the most of any rank; "
               "baseline at most rss %.1f, anon %.1f MiB)\n",
               label, size, colls, (unsigned long long)bytes, calls, base_out[0], base_out[1]);
        printf("footprint %s at=base ranks=%d rss=%.1f anon=%.1f\n", label, size, base_out[0],
               base_out[1]);
    }

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
    const double burst_end = MPI_Wtime();
    report(label, "burst", mem_max_above(mem_now(), base), cap);

    /* Idle: computing, with an MPI call every 100 ms. */
    MPI_Request req;
    int dummy = 0, flag;
    MPI_Irecv(&dummy, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_SELF, &req);
    for (int k = 0; k < ncheck; k++) {
        while (MPI_Wtime() - burst_end < checkpoints[k]) {
            usleep(100 * 1000);
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        }
        /* Each rank samples itself when it gets there; the reduction of
         * the figures comes after (it is an MPI call of its own). */
        const mem_t now = mem_now();
        char at[32];
        snprintf(at, sizeof(at), "%ds", checkpoints[k]);
        report(label, at, mem_max_above(now, base), cap);
    }
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (verbose && 0 == rank) {
        smaps_growth(maps_before, nbefore, maps_after, smaps_read(maps_after, MAX_MAPPINGS));
    }

    long all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("footprint %s check=%s\n", label, 0 == all_bad ? "ok" : "FAILED");
    }
    pvar_util_finalize();
    free(maps_before);
    free(maps_after);
    free(a);
    free(b);
    MPI_Finalize();
    return 0 == all_bad ? 0 : 1;
}
