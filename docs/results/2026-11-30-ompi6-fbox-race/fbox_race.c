/*
 * A reproducer for Open MPI 6.0.x's btl/sm fast-box race, with nothing of
 * ompi-bufpool in it: THREADS threads in each of 2 processes exchange small
 * messages (MPI_Sendrecv of BYTES bytes) with the other process for SECONDS
 * seconds (rank 0's clock: the first byte of its message says whether
 * another exchange follows), each thread on a duplicate of MPI_COMM_WORLD
 * of its own.  Every message goes through the one fast box of the pair,
 * from several threads at once.  A process still running LIMIT seconds
 * after the threads started says so and aborts the job (exit status 3);
 * otherwise rank 0 prints the exchanges, and the exit status is 1 where a
 * byte arrived wrong.
 *
 *   mpicc -O2 -pthread fbox_race.c -o fbox_race
 *   mpirun -np 2 ./fbox_race [THREADS [SECONDS [BYTES [LIMIT]]]]
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    MPI_Comm comm;
    double seconds;
    int bytes, id;
    long exchanges, bad;
} worker_t;

static int world_rank;

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "fbox_race: HANG: still running after the limit\n";
    if (write(2, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to say */
    }
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static unsigned char pattern(int id, long round, int rank)
{
    return (unsigned char)((id * 31 + round + rank) & 0xff);
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    const int peer = 1 - world_rank;
    unsigned char *out = malloc((size_t)w->bytes), *in = malloc((size_t)w->bytes);
    const double end = MPI_Wtime() + w->seconds;
    for (bool more = true; more; w->exchanges++) {
        const long r = w->exchanges;
        memset(out, pattern(w->id, r, world_rank), (size_t)w->bytes);
        out[0] = 0 == world_rank ? MPI_Wtime() < end : 1;
        MPI_Sendrecv(out, w->bytes, MPI_BYTE, peer, (int)(r & 0x7fff), in, w->bytes, MPI_BYTE, peer,
                     (int)(r & 0x7fff), w->comm, MPI_STATUS_IGNORE);
        more = 0 == world_rank ? out[0] : in[0];
        for (int i = 1; i < w->bytes; i++) {
            w->bad += in[i] != pattern(w->id, r, peer);
        }
    }
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int threads = argc > 1 ? atoi(argv[1]) : 8;
    const double seconds = argc > 2 ? atof(argv[2]) : 2.0;
    const int bytes = argc > 3 ? atoi(argv[3]) : 64;
    const int limit = argc > 4 ? atoi(argv[4]) : 30;
    if (size != 2 || provided < MPI_THREAD_MULTIPLE || threads < 1 || !(seconds > 0) || bytes < 1 ||
        limit <= seconds) {
        if (0 == world_rank) {
            fprintf(stderr,
                    "fbox_race: needs 2 processes, MPI_THREAD_MULTIPLE (got %d), "
                    "positive THREADS SECONDS BYTES and LIMIT > SECONDS\n",
                    provided);
        }
        MPI_Finalize();
        return 2;
    }
    worker_t *w = calloc((size_t)threads, sizeof(*w));
    pthread_t *tid = calloc((size_t)threads, sizeof(*tid));
    for (int t = 0; t < threads; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
        w[t].seconds = seconds;
        w[t].bytes = bytes;
        w[t].id = t;
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)limit);
    const double t0 = MPI_Wtime();
    for (int t = 0; t < threads; t++) {
        pthread_create(&tid[t], NULL, worker, &w[t]);
    }
    long bad = 0, exchanges = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        bad += w[t].bad;
        exchanges += w[t].exchanges;
    }
    alarm(0);
    const double secs = MPI_Wtime() - t0;
    for (int t = 0; t < threads; t++) {
        MPI_Comm_free(&w[t].comm);
    }
    long all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == world_rank) {
        printf("fbox_race: %d threads, %ld exchanges of %d bytes in %.2f s, %ld wrong bytes\n",
               threads, exchanges, bytes, secs, all_bad);
    }
    free(w);
    free(tid);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
