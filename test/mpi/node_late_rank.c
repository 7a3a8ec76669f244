/* One rank of the job late to its first collective, for coll_node.sh's
 * check that a job killed while rank 0 holds a node segment's name (the
 * segment created, the name kept until every rank has mapped it) leaves
 * nothing in /dev/shm: the runtime removes the name its creator registered
 * for cleanup.  Every rank prints its pid; then every rank but 0 sleeps
 * LATE seconds (the first argument, default 60) while rank 0 enters
 * MPI_Allreduce, which (a node algorithm forced by the script, no warm-up)
 * creates the segment and waits there for the others.  The script kills
 * the ranks in between; run with a short LATE, it checks the sum and exits
 * 0 when it is right.
 *
 * With a second argument "nodump" rank 0 makes itself not dumpable
 * (prctl) before the allreduce, so that a rank without CAP_SYS_PTRACE may
 * not open its /proc/PID/fd: coll_node.sh's check that the set-up of an
 * unnamed segment falls back to a named one.  With "pidns" instead, rank 1
 * runs in a PID namespace of its own (it executes itself again under
 * unshare -p -f -m --mount-proc before MPI_Init: root only), where rank
 * 0's /proc/PID is another process or none, as Apptainer without setuid
 * gives each rank.  After the allreduce every
 * rank prints what it added to coll_bufpool_node_links_refused and
 * coll_bufpool_node_calls. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "pvar_util.h"

/* Rank 1 of "pidns": this program again, under unshare, in a PID
 * namespace of its own; returns only when that cannot start. */
static void pidns_rank_reexec(char **argv)
{
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (NULL == rank || 0 != strcmp(rank, "1") || NULL != getenv("NODE_LATE_RANK_PIDNS")) {
        return;
    }
    setenv("NODE_LATE_RANK_PIDNS", "1", 1);
    char *args[] = {"unshare", "-p", "-f", "-m", "--mount-proc", argv[0], argv[1], argv[2], NULL};
    execvp("unshare", args);
    perror("node_late_rank: unshare");
}

int main(int argc, char **argv)
{
    if (argc > 2 && 0 == strcmp(argv[2], "pidns")) {
        pidns_rank_reexec(argv);
    }
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const unsigned late = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 60;
    printf("node_late_rank: rank %d pid %ld\n", rank, (long)getpid());
    fflush(stdout);
    if (0 != rank) {
        sleep(late);
    } else if (argc > 2 && 0 == strcmp(argv[2], "nodump") && 0 != prctl(PR_SET_DUMPABLE, 0)) {
        perror("node_late_rank: prctl");
    }
    /* Counters count from their handles' first read (pvar_util.h). */
    const unsigned long long refused0 =
        pvar_util_value_or_abort("node_late_rank", "coll_bufpool_node_links_refused");
    const unsigned long long calls0 =
        pvar_util_value_or_abort("node_late_rank", "coll_bufpool_node_calls");
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const long want = (long)size * (size + 1) / 2;
    if (sum != want) {
        fprintf(stderr, "node_late_rank: rank %d: sum %ld, expected %ld\n", rank, sum, want);
    }
    printf("node_late_rank: rank %d links refused %llu node calls %llu\n", rank,
           pvar_util_value_or_abort("node_late_rank", "coll_bufpool_node_links_refused") - refused0,
           pvar_util_value_or_abort("node_late_rank", "coll_bufpool_node_calls") - calls0);
    fflush(stdout);
    pvar_util_finalize();
    MPI_Finalize();
    return sum == want ? 0 : 1;
}
