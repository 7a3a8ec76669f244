/*
 * comm_toll: what coll/bufpool costs per communicator.
 *
 * bufpool resolves its size maps when a communicator is made (its module's
 * enable), and a node algorithm sets up the communicator's shared segment
 * at its first call (one round of point-to-point messages, a shm_open and
 * a mapping).  A program that makes many short-lived communicators pays
 * both each time.  This program times, in one job, MPI_Comm_dup_with_info
 * of MPI_COMM_WORLD followed by K calls of a collective and MPI_Comm_free,
 * for K = 0, 1 and 16 (or -k LIST), with the duplicate's info
 *
 *   stock    ompi_comm_coll_preference=^bufpool: Open MPI alone;
 *   bufpool  none: bufpool as configured (its rules decide the calls).
 *
 * Batches alternate between the two (so that drifts of a shared machine
 * touch both alike); each batch's time is the slowest rank's.  Printed per
 * collective and K: the medians of us per communicator and their
 * difference.
 *
 *   mpirun -np P comm_toll [-n COMMS] [-b BATCHES] [-k LIST] [-c barrier|allreduce]
 *
 * -n communicators per configuration and K (default 2000), cut into -b
 * batches (default 20); -c the collective called K times (default
 * barrier; allreduce: 8 bytes of MPI_INT sum).  Timings are for comparing
 * within one run.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BATCHES 200
#define MAX_KS      8

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One batch: n communicators made, used k times and freed; the slowest
 * rank's seconds. */
static double batch(MPI_Info info, int n, int k, int allreduce)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        MPI_Comm c;
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
        for (int j = 0; j < k; j++) {
            if (allreduce) {
                int in[2] = {i, j}, out[2];
                MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, c);
            } else {
                MPI_Barrier(c);
            }
        }
        MPI_Comm_free(&c);
    }
    double t = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv)
{
    int comms = 2000, batches = 20, allreduce = 0, nks = 3, ks[MAX_KS] = {0, 1, 16};
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "-n") && i + 1 < argc) {
            comms = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "-b") && i + 1 < argc) {
            batches = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "-c") && i + 1 < argc) {
            allreduce = 0 == strcmp(argv[++i], "allreduce");
        } else if (0 == strcmp(argv[i], "-k") && i + 1 < argc) {
            nks = 0;
            for (char *save = NULL, *t = strtok_r(argv[++i], ",", &save); t && nks < MAX_KS;
                 t = strtok_r(NULL, ",", &save)) {
                ks[nks++] = atoi(t);
            }
        } else {
            if (0 == rank) {
                fprintf(stderr, "usage: comm_toll [-n COMMS] [-b BATCHES] [-k LIST] "
                                "[-c barrier|allreduce]\n");
            }
            MPI_Finalize();
            return 2;
        }
    }
    if (batches < 1 || batches > MAX_BATCHES || comms < batches || nks < 1) {
        if (0 == rank) {
            fprintf(stderr, "comm_toll: -b from 1 to %d, -n at least -b, -k not empty\n",
                    MAX_BATCHES);
        }
        MPI_Finalize();
        return 2;
    }
    MPI_Info stock, none = MPI_INFO_NULL;
    MPI_Info_create(&stock);
    MPI_Info_set(stock, "ompi_comm_coll_preference", "^bufpool");
    const int per = comms / batches;
    if (0 == rank) {
        printf("# comm_toll: MPI_Comm_dup_with_info + K x MPI_%s + MPI_Comm_free, %d "
               "communicators per point in %d alternating batches; us per communicator "
               "(median of the batches, slowest rank)\n",
               allreduce ? "Allreduce" : "Barrier", per * batches, batches);
        printf("%-4s %12s %12s %12s\n", "K", "stock", "bufpool", "difference");
    }
    for (int x = 0; x < nks; x++) {
        double t[2][MAX_BATCHES];
        (void)batch(stock, per, ks[x], allreduce); /* warm-up of both */
        (void)batch(none, per, ks[x], allreduce);
        for (int b = 0; b < batches; b++) {
            t[0][b] = batch(stock, per, ks[x], allreduce) / per * 1e6;
            t[1][b] = batch(none, per, ks[x], allreduce) / per * 1e6;
        }
        const double s = median(t[0], batches), bp = median(t[1], batches);
        if (0 == rank) {
            printf("%-4d %12.1f %12.1f %12.1f\n", ks[x], s, bp, bp - s);
        }
    }
    MPI_Info_free(&stock);
    MPI_Finalize();
    return 0;
}
