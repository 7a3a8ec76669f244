/*
 * coll_toll: what coll/bufpool's hand-back costs per call.
 *
 * A call that bufpool does not serve goes to the module Open MPI selected
 * before it (tuned, normally) through bufpool's entry point: the size map
 * lookup, a counter and a second indirect call.  This program times, in one
 * job, the same 8-byte collectives on three duplicates of MPI_COMM_WORLD:
 *
 *   direct     bufpool excluded (info ompi_comm_coll_preference=^bufpool):
 *              Open MPI calls the previous module itself;
 *   handback   bufpool selected, every call of the timed collectives handed
 *              back (info coll_bufpool_algorithm=COLL:previous,...): the path
 *              of every call the rules give back;
 *   auto       bufpool as configured (its rules decide; at 8 bytes on 2
 *              ranks they hand back too).
 *
 * Batches of calls alternate between the configurations (ABCABC...), so
 * that drifts of a shared machine touch all three alike; each batch's time
 * is the slowest rank's.  Printed per collective and configuration: the
 * median, the first and third quartiles of ns per call over the batches,
 * and the toll = handback's median minus direct's, in ns and as a ratio.
 *
 *   mpirun -np P coll_toll [-n CALLS] [-b BATCHES] [-c LIST] [-s BYTES] [-F nonblocking]
 *
 * -F nonblocking times MPI_I<coll> + MPI_Wait instead (the previous module
 * is then libnbc: the toll of bufpool's nonblocking entry).
 * -n total calls per collective and configuration (default 1000000),
 * -b batches they are cut into (default 40), -c collectives (allreduce,
 * bcast, reduce, allgather, alltoall, gather, scatter, scan,
 * reduce_scatter_block; default allreduce,bcast),
 * -s bytes per call (default 8).  Timings are for comparing within one
 * run; bench/run-side-by-side.sh runs it and reports the table.
 */
#include <mpi.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DIRECT, HANDBACK, AUTO, NCONFIGS };
static const char *const config_names[NCONFIGS] = {"direct", "handback", "auto"};

typedef struct {
    const char *name;
    int (*run)(MPI_Comm comm, void *a, void *b, int count);
    int (*irun)(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req);
} toll_coll_t;

static int run_allreduce(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Allreduce(a, b, count, MPI_INT64_T, MPI_SUM, comm);
}
static int run_bcast(MPI_Comm comm, void *a, void *b, int count)
{
    (void)b;
    return MPI_Bcast(a, count, MPI_INT64_T, 0, comm);
}
static int run_reduce(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Reduce(a, b, count, MPI_INT64_T, MPI_SUM, 0, comm);
}
static int run_allgather(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Allgather(a, count, MPI_INT64_T, b, count, MPI_INT64_T, comm);
}
static int run_alltoall(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Alltoall(a, count, MPI_INT64_T, b, count, MPI_INT64_T, comm);
}
static int run_gather(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Gather(a, count, MPI_INT64_T, b, count, MPI_INT64_T, 0, comm);
}
static int run_scatter(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Scatter(a, count, MPI_INT64_T, b, count, MPI_INT64_T, 0, comm);
}
static int run_reduce_scatter_block(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Reduce_scatter_block(a, b, count, MPI_INT64_T, MPI_SUM, comm);
}
static int run_scan(MPI_Comm comm, void *a, void *b, int count)
{
    return MPI_Scan(a, b, count, MPI_INT64_T, MPI_SUM, comm);
}

static int irun_allreduce(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Iallreduce(a, b, count, MPI_INT64_T, MPI_SUM, comm, req);
}
static int irun_bcast(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    (void)b;
    return MPI_Ibcast(a, count, MPI_INT64_T, 0, comm, req);
}
static int irun_reduce(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Ireduce(a, b, count, MPI_INT64_T, MPI_SUM, 0, comm, req);
}
static int irun_allgather(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Iallgather(a, count, MPI_INT64_T, b, count, MPI_INT64_T, comm, req);
}
static int irun_alltoall(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Ialltoall(a, count, MPI_INT64_T, b, count, MPI_INT64_T, comm, req);
}
static int irun_gather(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Igather(a, count, MPI_INT64_T, b, count, MPI_INT64_T, 0, comm, req);
}
static int irun_scatter(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Iscatter(a, count, MPI_INT64_T, b, count, MPI_INT64_T, 0, comm, req);
}
static int irun_reduce_scatter_block(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Ireduce_scatter_block(a, b, count, MPI_INT64_T, MPI_SUM, comm, req);
}
static int irun_scan(MPI_Comm comm, void *a, void *b, int count, MPI_Request *req)
{
    return MPI_Iscan(a, b, count, MPI_INT64_T, MPI_SUM, comm, req);
}

static const toll_coll_t colls[] = {
    {"allreduce", run_allreduce, irun_allreduce},
    {"bcast", run_bcast, irun_bcast},
    {"reduce", run_reduce, irun_reduce},
    {"allgather", run_allgather, irun_allgather},
    {"alltoall", run_alltoall, irun_alltoall},
    {"gather", run_gather, irun_gather},
    {"scatter", run_scatter, irun_scatter},
    {"scan", run_scan, irun_scan},
    {"reduce_scatter_block", run_reduce_scatter_block, irun_reduce_scatter_block},
};

/* One call of coll c, blocking or (nonblocking) MPI_I<coll> + MPI_Wait. */
static void call_once(int c, bool nonblocking, MPI_Comm comm, void *a, void *b, int count)
{
    if (nonblocking) {
        MPI_Request req;
        colls[c].irun(comm, a, b, count, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        colls[c].run(comm, a, b, count);
    }
}
#define NCOLLS ((int)(sizeof(colls) / sizeof(*colls)))

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The q-quantile of n sorted values (linear interpolation). */
static double quantile(const double *v, int n, double q)
{
    const double at = q * (n - 1);
    const int i = (int)at;
    return i + 1 < n ? v[i] + (at - i) * (v[i + 1] - v[i]) : v[n - 1];
}

static MPI_Comm config_comm(int config, int selected)
{
    MPI_Info info;
    MPI_Comm comm;
    MPI_Info_create(&info);
    if (DIRECT == config) {
        MPI_Info_set(info, "ompi_comm_coll_preference", "^bufpool");
    } else if (HANDBACK == config) {
        /* One key for all ("COLL:previous,..."): coll_bufpool_<coll>_algorithm
         * of reduce_scatter_block exceeds MPI_MAX_INFO_KEY. */
        char list[512] = "";
        for (int c = 0; c < NCOLLS; c++) {
            if (selected & (1 << c)) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof(list) - used, "%s%s:previous", used ? "," : "",
                         colls[c].name);
            }
        }
        MPI_Info_set(info, "coll_bufpool_algorithm", list);
    }
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    MPI_Info_free(&info);
    return comm;
}

static void usage(int rank)
{
    if (0 == rank) {
        fprintf(stderr,
                "usage: coll_toll [-n CALLS] [-b BATCHES] [-c LIST] [-s BYTES] [-F nonblocking]\n");
    }
}

/* Long on purpose: the benchmark's one sequence (options, each
 * configuration's timed calls, the table), read top to bottom. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long calls = 1000000;
    int batches = 40, selected = 0, bytes = 8;
    bool nonblocking = false;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (NULL == v) {
            usage(rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (0 == strcmp(argv[i], "-n")) {
            calls = atol(v);
        } else if (0 == strcmp(argv[i], "-b")) {
            batches = atoi(v);
        } else if (0 == strcmp(argv[i], "-s")) {
            bytes = atoi(v);
        } else if (0 == strcmp(argv[i], "-F")) {
            if (0 != strcmp(v, "nonblocking") && 0 != strcmp(v, "blocking")) {
                usage(rank);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            nonblocking = 0 == strcmp(v, "nonblocking");
        } else if (0 == strcmp(argv[i], "-c")) {
            char *list = strdup(v);
            for (char *save = NULL, *t = strtok_r(list, ",", &save); t;
                 t = strtok_r(NULL, ",", &save)) {
                int c = 0;
                while (c < NCOLLS && 0 != strcmp(t, colls[c].name)) {
                    c++;
                }
                if (c == NCOLLS) {
                    if (0 == rank) {
                        fprintf(stderr, "coll_toll: unknown collective %s\n", t);
                    }
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
                selected |= 1 << c;
            }
            free(list);
        } else {
            usage(rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        i++;
    }
    if (0 == selected) {
        selected = 1 << 0 | 1 << 1;
    }
    if (calls < batches || batches < 3 || bytes < 8) {
        usage(rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int count = bytes / 8;
    const long per_batch = calls / batches;
    int64_t *a = calloc((size_t)count * (size_t)size, sizeof(*a));
    int64_t *b = calloc((size_t)count * (size_t)size, sizeof(*b));
    double *ns = malloc(sizeof(*ns) * (size_t)batches * NCONFIGS);
    MPI_Comm comm[NCONFIGS];
    for (int k = 0; k < NCONFIGS; k++) {
        comm[k] = config_comm(k, selected);
    }
    if (0 == rank) {
        char host[MPI_MAX_PROCESSOR_NAME];
        int len;
        MPI_Get_processor_name(host, &len);
        printf("# coll_toll: %d ranks, %d bytes per call%s, %ld calls per collective and "
               "configuration in %d interleaved batches, ns per call (slowest rank); host %s\n",
               size, count * 8, nonblocking ? " (MPI_I<coll> + MPI_Wait)" : "", per_batch * batches,
               batches, host);
        printf("%-20s %-9s %10s %10s %10s %10s %8s\n", "collective", "config", "median", "q1", "q3",
               "toll_ns", "ratio");
    }
    for (int c = 0; c < NCOLLS; c++) {
        if (!(selected & (1 << c))) {
            continue;
        }
        /* Warm up every path (first-call costs, caches). */
        for (int k = 0; k < NCONFIGS; k++) {
            for (long i = 0; i < per_batch / 10 + 100; i++) {
                call_once(c, nonblocking, comm[k], a, b, count);
            }
        }
        for (int batch = 0; batch < batches; batch++) {
            for (int j = 0; j < NCONFIGS; j++) {
                /* Rotate the order each batch: no configuration always goes
                 * first after the barrier. */
                const int k = (j + batch) % NCONFIGS;
                MPI_Barrier(comm[k]);
                const double t0 = MPI_Wtime();
                for (long i = 0; i < per_batch; i++) {
                    call_once(c, nonblocking, comm[k], a, b, count);
                }
                double t = MPI_Wtime() - t0, slowest;
                MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                ns[k * batches + batch] = slowest * 1e9 / (double)per_batch;
            }
        }
        if (0 == rank) {
            double median[NCONFIGS];
            for (int k = 0; k < NCONFIGS; k++) {
                double *v = ns + k * batches;
                qsort(v, (size_t)batches, sizeof(*v), cmp_double);
                median[k] = quantile(v, batches, 0.5);
                const double toll = median[k] - median[DIRECT];
                printf("%-20s %-9s %10.1f %10.1f %10.1f %10.1f %8.3f\n", colls[c].name,
                       config_names[k], median[k], quantile(v, batches, 0.25),
                       quantile(v, batches, 0.75), toll, median[k] / median[DIRECT]);
            }
            fflush(stdout);
        }
    }
    for (int k = 0; k < NCONFIGS; k++) {
        MPI_Comm_free(&comm[k]);
    }
    free(a);
    free(b);
    free(ns);
    MPI_Finalize();
    return 0;
}
