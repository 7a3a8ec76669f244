/*
 * Processes of two jobs in one communicator: this program's ranks spawn
 * --children more (MPI_Comm_spawn), both sides merge the inter-communicator
 * (MPI_Intercomm_merge), and the merged communicator runs MPI_Allreduce,
 * MPI_Bcast from every root and MPI_Iallreduce.  bufpool compares every
 * member's settings digest when a communicator is made
 * (ompi-mca-coll-bufpool/coll_bufpool_alike.h), here across two jobs'
 * modex data, so this checks:
 *   - every result bit for bit (sums of small integers in doubles, exact);
 *   - with --expect-bufpool, that coll_bufpool_allreduce_calls grew on
 *     every process of both jobs: the children's digests were found and
 *     agreed, so bufpool served the merged communicator;
 *   - with --expect-bufpool=none, that it did not grow: --child-env=NAME=VALUE
 *     puts a setting into the children's environment before their MPI_Init
 *     (a coll_bufpool_* parameter the parents do not have), so the digests
 *     differ and bufpool keeps out of the merged communicator on every
 *     process of both jobs.
 * Every process prints one line; the parents' rank 0 prints PASS or FAIL
 * for both jobs.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvar_util.h"

#define COUNT (1 << 16)

static int failures;

static void check(bool ok, int rank, const char *what)
{
    if (!ok) {
        printf("FAIL [merged rank %d] %s\n", rank, what);
        failures++;
    }
}

int main(int argc, char **argv)
{
    int children = 2, expect = 0; /* 1: calls grow, 2: they do not */
    bool spawned = false;
    char *child_env = NULL;
    for (int i = 1; i < argc; i++) {
        if (0 == strncmp(argv[i], "--children=", 11)) {
            children = atoi(argv[i] + 11);
        } else if (0 == strcmp(argv[i], "--expect-bufpool")) {
            expect = 1;
        } else if (0 == strcmp(argv[i], "--expect-bufpool=none")) {
            expect = 2;
        } else if (0 == strncmp(argv[i], "--child-env=", 12)) {
            child_env = argv[i] + 12;
        } else if (0 == strcmp(argv[i], "--spawned")) {
            spawned = true;
        }
    }
    if (spawned && NULL != child_env) {
        putenv(child_env); /* read by the MCA parameters at MPI_Init */
    }
    MPI_Init(&argc, &argv);
    MPI_Comm parent, inter, merged;
    MPI_Comm_get_parent(&parent);
    const bool child = MPI_COMM_NULL != parent;
    if (child) {
        inter = parent;
    } else {
        /* The children get this program's arguments and --spawned. */
        char **args = calloc((size_t)argc + 1, sizeof(*args));
        if (NULL == args) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (int i = 1; i < argc; i++) {
            args[i - 1] = argv[i];
        }
        args[argc - 1] = "--spawned";
        MPI_Comm_spawn(argv[0], args, children, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                       MPI_ERRCODES_IGNORE);
        free(args);
    }
    MPI_Intercomm_merge(inter, child ? 1 : 0, &merged);
    int rank, size;
    MPI_Comm_rank(merged, &rank);
    MPI_Comm_size(merged, &size);

    unsigned long long before = 0, after = 0;
    enum pvar_status st = pvar_util_init();
    if (PVAR_OK == st) {
        st = pvar_util_read("coll_bufpool_allreduce_calls", &before);
    }

    double *in = malloc(COUNT * sizeof(double)), *out = malloc(COUNT * sizeof(double));
    if (NULL == in || NULL == out) {
        printf("test_coll_spawn: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int n = 1; n <= COUNT; n *= 16) {
        for (int i = 0; i < n; i++) {
            in[i] = rank + i;
        }
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, merged);
        bool ok = true;
        for (int i = 0; i < n; i++) {
            ok = ok && out[i] == (double)size * i + size * (size - 1) / 2.0;
        }
        check(ok, rank, "MPI_Allreduce: a wrong element");
        MPI_Request req;
        MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, merged, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        ok = true;
        for (int i = 0; i < n; i++) {
            ok = ok && out[i] == (double)size * i + size * (size - 1) / 2.0;
        }
        check(ok, rank, "MPI_Iallreduce: a wrong element");
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < n; i++) {
                out[i] = rank == root ? root * 1000.0 + i : -1.0;
            }
            MPI_Bcast(out, n, MPI_DOUBLE, root, merged);
            ok = true;
            for (int i = 0; i < n; i++) {
                ok = ok && out[i] == root * 1000.0 + i;
            }
            check(ok, rank, "MPI_Bcast: a wrong element");
        }
    }
    if (PVAR_OK == st) {
        st = pvar_util_read("coll_bufpool_allreduce_calls", &after);
    }
    if (1 == expect) {
        check(PVAR_OK == st && after > before, rank,
              "--expect-bufpool: coll_bufpool_allreduce_calls did not grow");
    } else if (2 == expect) {
        check(PVAR_NOT_FOUND == st || after == before, rank,
              "--expect-bufpool=none: coll_bufpool_allreduce_calls grew");
    }
    printf("test_coll_spawn: merged rank %d of %d (%s): %d failures, bufpool allreduce calls "
           "%llu\n",
           rank, size, child ? "child" : "parent", failures, after - before);
    fflush(stdout);

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, merged);
    if (0 == rank) {
        printf("test_coll_spawn: %s: %d processes of two jobs, %d failures\n",
               0 == total ? "PASS" : "FAIL", size, total);
    }
    pvar_util_finalize();
    free(in);
    free(out);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0 == total ? 0 : 1;
}
