/* One rank of the job late to its first collective, for coll_node.sh's
 * check that a job killed while rank 0 holds a node segment's name (the
 * segment created, the name kept until every rank has mapped it) leaves
 * nothing in /dev/shm: the runtime removes the name its creator registered
 * for cleanup.  Every rank prints its pid; then every rank but 0 sleeps
 * LATE seconds (the first argument, default 60) while rank 0 enters
 * MPI_Allreduce, which (a node algorithm forced by the script, no warm-up)
 * creates the segment and waits there for the others.  The script kills
 * the ranks in between; run with a short LATE, it checks the sum and exits
 * 0 when it is right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const unsigned late = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 60;
    printf("node_late_rank: rank %d pid %ld\n", rank, (long)getpid());
    fflush(stdout);
    if (0 != rank) {
        sleep(late);
    }
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const long want = (long)size * (size + 1) / 2;
    if (sum != want) {
        fprintf(stderr, "node_late_rank: rank %d: sum %ld, expected %ld\n", rank, sum, want);
    }
    MPI_Finalize();
    return sum == want ? 0 : 1;
}
