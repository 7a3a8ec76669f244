/*
 * MPI_Barrier, MPI_Ibarrier and MPI_Barrier_init (MPIX_ on Open MPI 4.1)
 * against what a barrier promises: no rank leaves call i before every rank
 * has entered it.
 *
 * Every rank runs on one host here (the node barrier's only home), so
 * CLOCK_MONOTONIC is one clock for all of them.  In each round one rank,
 * every rank in turn, enters late (it spins LATE_US first); every
 * rank stamps its entry just before the call (or its start) and its exit
 * just after completion, and at the end rank 0 checks, round by round, that
 * the earliest exit is no earlier than the latest entry.  A barrier that
 * lets a rank through early fails by about LATE_US.  Between barriers the
 * rounds run other collectives (an allreduce and a bcast whose results are
 * checked), so that a node barrier shares its sequence numbers with the
 * other node algorithms of the communicator; nonblocking rounds keep two
 * barriers and an allreduce in flight at once and complete them out of
 * order.  Communicators: MPI_COMM_WORLD, a duplicate, the ranks reversed,
 * and the even ranks (more than 2 ranks).
 *
 *   test_coll_barrier [--form=blocking|nonblocking|persistent|all]
 *                     [--rounds=N] [--expect-node[=fallback|=none]]
 *                     [--expect-bufpool] [--expect-node-tree] [--no-even]
 * --expect-node: on every rank, node calls ran over a shared segment and
 * none fell back (coll_bufpool_node_calls, _node_fallbacks); =fallback:
 * none ran over a segment and some fell back; =none: no node call at all,
 * over a segment or not.  --expect-bufpool: bufpool
 * served barriers in every form run (coll_bufpool_[i]barrier[_init]_calls).
 * --no-even: leave the even ranks' communicator out (it has no rank 2 for
 * coll_bufpool_test_node_fail 2 to fail in).  --expect-node-tree: some node
 * calls ran in groups (two levels, coll_bufpool_node_tree_calls: run with
 * the barrier alone over the segment, the barriers).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "pcoll.h"
#include "pvar_util.h"

#define LATE_US 200.0

static int world_rank, failures;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void spin_us(double us)
{
    const double until = now_us() + us;
    while (now_us() < until) {
    }
}

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failures++;
    printf("test_coll_barrier: FAIL (rank %d): ", world_rank);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

enum form { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *const form_names[] = {"blocking", "nonblocking", "persistent"};

/* The other collectives of a round, checked: a node allreduce and bcast
 * share the communicator's sequence numbers with the barriers. */
static void others(MPI_Comm comm, int round, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long v = rank + round, sum = 0, root_value = rank == round % size ? 1000L + round : -1;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
    if (sum != (long)size * (size - 1) / 2 + (long)size * round) {
        fail("%s: allreduce of round %d: %ld", what, round, sum);
    }
    MPI_Bcast(&root_value, 1, MPI_LONG, round % size, comm);
    if (root_value != 1000L + round) {
        fail("%s: bcast of round %d: %ld", what, round, root_value);
    }
}

/* rounds barriers of form on comm; enter/leave: this rank's stamps, two
 * per round in the nonblocking form (both barriers in flight). */
static void run_form(MPI_Comm comm, enum form form, int rounds, double *enter, double *leave,
                     const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request persistent = MPI_REQUEST_NULL;
    if (PERSISTENT == form) {
        PCOLL_INIT(Barrier)(comm, MPI_INFO_NULL, &persistent);
    }
    for (int i = 0; i < rounds; i++) {
        const int late = i % size; /* every rank in turn */
        if (rank == late) {
            spin_us(LATE_US);
        }
        if (BLOCKING == form) {
            enter[i] = now_us();
            MPI_Barrier(comm);
            leave[i] = now_us();
        } else if (PERSISTENT == form) {
            enter[i] = now_us();
            MPI_Start(&persistent);
            MPI_Wait(&persistent, MPI_STATUS_IGNORE);
            leave[i] = now_us();
        } else {
            /* Two barriers and an allreduce in flight, completed in reverse
             * order; the second barrier's late rank is the next one. */
            MPI_Request req[3];
            long v = 1, sum = 0;
            enter[2 * i] = now_us();
            MPI_Ibarrier(comm, &req[0]);
            MPI_Iallreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm, &req[1]);
            if (rank == (late + 1) % size) {
                spin_us(LATE_US);
            }
            enter[2 * i + 1] = now_us();
            MPI_Ibarrier(comm, &req[2]);
            MPI_Wait(&req[2], MPI_STATUS_IGNORE);
            leave[2 * i + 1] = now_us();
            MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
            leave[2 * i] = now_us();
            if (sum != size) {
                fail("%s: iallreduce between ibarriers, round %d: %ld", what, i, sum);
            }
        }
        if (0 == i % 4) {
            others(comm, i, what);
        }
    }
    if (PERSISTENT == form) {
        MPI_Request_free(&persistent);
    }
}

/* Rank 0 of comm: every barrier's earliest exit against its latest entry. */
static void check_stamps(MPI_Comm comm, int n, const double *enter, const double *leave,
                         const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double *all_enter = NULL, *all_leave = NULL;
    if (0 == rank) {
        all_enter = malloc(sizeof(double) * (size_t)n * (size_t)size);
        all_leave = malloc(sizeof(double) * (size_t)n * (size_t)size);
    }
    MPI_Gather(enter, n, MPI_DOUBLE, all_enter, n, MPI_DOUBLE, 0, comm);
    MPI_Gather(leave, n, MPI_DOUBLE, all_leave, n, MPI_DOUBLE, 0, comm);
    if (0 == rank) {
        for (int i = 0; i < n; i++) {
            double last_in = all_enter[i], first_out = all_leave[i];
            for (int r = 1; r < size; r++) {
                last_in = all_enter[r * n + i] > last_in ? all_enter[r * n + i] : last_in;
                first_out = all_leave[r * n + i] < first_out ? all_leave[r * n + i] : first_out;
            }
            if (first_out < last_in) {
                fail("%s: barrier %d: a rank left %.1f us before the last one entered", what, i,
                     last_in - first_out);
            }
        }
    }
    free(all_enter);
    free(all_leave);
}

static unsigned long long read_pvar(const char *name)
{
    unsigned long long v = 0;
    enum pvar_status st = pvar_util_read(name, &v);
    if (PVAR_OK != st) {
        fail("%s: %s", name, pvar_util_status_string(st));
    }
    return v;
}

int main(int argc, char **argv)
{
    int forms[3] = {1, 1, 1}, rounds = 64, expect_node = 0, expect_bufpool = 0, no_even = 0,
        expect_tree = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (0 == strncmp(a, "--form=", 7)) {
            for (int f = 0; f < 3; f++) {
                forms[f] = 0 == strcmp(a + 7, "all") || 0 == strcmp(a + 7, form_names[f]);
            }
        } else if (0 == strncmp(a, "--rounds=", 9)) {
            rounds = atoi(a + 9);
        } else if (0 == strcmp(a, "--expect-node")) {
            expect_node = 1;
        } else if (0 == strcmp(a, "--expect-node=fallback")) {
            expect_node = 2;
        } else if (0 == strcmp(a, "--expect-node=none")) {
            expect_node = 3;
        } else if (0 == strcmp(a, "--expect-bufpool")) {
            expect_bufpool = 1;
        } else if (0 == strcmp(a, "--expect-node-tree")) {
            expect_tree = 1;
        } else if (0 == strcmp(a, "--no-even")) {
            no_even = 1;
        } else {
            if (0 == world_rank) {
                fprintf(stderr, "test_coll_barrier: unknown argument '%s'\n", a);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (rounds < 1 || rounds > 100000) {
        rounds = 64;
    }
    /* Counters read as MPI_T defines them: from the handle's allocation, at
     * the first read; so read them once now and count the difference. */
    static const char *const pvars[] = {
        "coll_bufpool_node_calls",         "coll_bufpool_node_fallbacks",
        "coll_bufpool_barrier_calls",      "coll_bufpool_ibarrier_calls",
        "coll_bufpool_barrier_init_calls", "coll_bufpool_node_tree_calls"};
    unsigned long long before[6] = {0};
    const int have_pvars = PVAR_OK == pvar_util_init();
    for (int k = 0; k < 6 && have_pvars && (expect_node || expect_bufpool || expect_tree); k++) {
        (void)pvar_util_read(pvars[k], &before[k]);
    }

    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[4];
    const char *names[4] = {"world", "dup", "reversed", "even"};
    int ncomms = 0;
    comms[ncomms++] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[ncomms++]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - world_rank, &comms[ncomms++]);
    MPI_Comm even;
    MPI_Comm_split(MPI_COMM_WORLD, size > 2 && !no_even && 0 == world_rank % 2 ? 0 : MPI_UNDEFINED,
                   world_rank, &even);
    double *enter = malloc(sizeof(double) * 2 * (size_t)rounds);
    double *leave = malloc(sizeof(double) * 2 * (size_t)rounds);
    int checked = 0;
    for (int c = 0; c < 4; c++) {
        MPI_Comm comm = c < 3 ? comms[c] : even;
        if (MPI_COMM_NULL == comm) {
            continue;
        }
        for (int f = 0; f < 3; f++) {
            if (!forms[f]) {
                continue;
            }
            char what[64];
            snprintf(what, sizeof(what), "%s %s", names[c], form_names[f]);
            const int n = NONBLOCKING == f ? 2 * rounds : rounds;
            run_form(comm, (enum form)f, rounds, enter, leave, what);
            check_stamps(comm, n, enter, leave, what);
            checked += n;
        }
    }
    if (expect_node) {
        const unsigned long long calls = read_pvar(pvars[0]) - before[0],
                                 fallbacks = read_pvar(pvars[1]) - before[1];
        if (1 == expect_node   ? calls == 0 || fallbacks != 0
            : 2 == expect_node ? calls != 0 || fallbacks == 0
                               : calls != 0 || fallbacks != 0) {
            fail("--expect-node%s: %llu node calls over a shared segment, %llu run "
                 "point-to-point instead",
                 1 == expect_node   ? ""
                 : 2 == expect_node ? "=fallback"
                                    : "=none",
                 calls, fallbacks);
        }
    }
    if (expect_tree && read_pvar(pvars[5]) == before[5]) {
        fail("--expect-node-tree: %s did not grow: no node call ran in groups", pvars[5]);
    }
    if (expect_bufpool) {
        for (int f = 0; f < 3; f++) {
            if (forms[f] && read_pvar(pvars[2 + f]) == before[2 + f]) {
                fail("--expect-bufpool: %s did not grow: bufpool served no %s barrier",
                     pvars[2 + f], form_names[f]);
            }
        }
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == world_rank) {
        printf("test_coll_barrier: %s: %d barriers checked on %d ranks, %d failures\n",
               0 == total ? "PASS" : "FAIL", checked, size, total);
    }
    free(enter);
    free(leave);
    if (MPI_COMM_NULL != even) {
        MPI_Comm_free(&even);
    }
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    pvar_util_finalize();
    MPI_Finalize();
    return 0 == total ? 0 : 1;
}
