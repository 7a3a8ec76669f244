/*
 * The hazards of coll/bufpool's nonblocking runtime (coll_bufpool_nb.c),
 * one case per run (--case=NAME), every result checked exactly:
 *
 *   tag-wrap     the communicator's tag counter wraps (run with
 *                --mca coll_bufpool_test_nbc_tag_range, a few blocks)
 *                while persistent requests keep their blocks: each round
 *                starts them and posts several MPI_Iallreduce on the same
 *                communicator, the even ranks starting them first and the
 *                odd ones last (MPI allows it), so that a new block
 *                landing on a persistent one would let the two match each
 *                other's messages;
 *   many         64 MPI_Ibcast in flight at once (more than the stack
 *                cache first holds), --rounds of them: results, never
 *                more stacks mapped (coll_bufpool_nb_stacks_mapped) than
 *                in flight, and the process's mapped size flat but for
 *                them;
 *   threads      MPI_THREAD_MULTIPLE: one thread starts MPI_Iallreduce
 *                with a slow user-defined operation, another completes
 *                them (requests handed over through a queue);
 *   big-frame    MPI_Iallreduce of 256 Ki doubles with a user-defined
 *                operation whose frame holds a local array of *len
 *                doubles (as Fortran's automatic arrays do): it must run
 *                on a stack as large as the caller's, not the task's;
 *   finalize     persistent requests started, completed and never freed,
 *                then MPI_Finalize: no crash, and (under the sanitizers,
 *                test/reliability/sanitize.sh) nothing leaked;
 *   start-order  persistent requests of seven collectives on one
 *                communicator, each rank starting them in its own order
 *                every round (MPI 4.0 allows it: they matched at their
 *                inits) and a blocking allreduce before them on the even
 *                ranks, after them on the odd ones; run with the node
 *                algorithms forced (coll_nb_hazards.sh), whose calls are
 *                numbered in the order they start (each persistent request
 *                has a segment of its own: --expect-node[=N] checks that
 *                at least N calls a round, all eight by default, ran over
 *                segments, none point-to-point, and that every segment is
 *                gone once the requests and the communicator are freed).  Found by
 *                MPICH's test coll/p_order, which hung;
 *   large-count  MPI 4's large-count reduce_scatter (MPI_Count counts:
 *                MPI_Reduce_scatter_c, MPI_Ireduce_scatter_c,
 *                MPI_Reduce_scatter_init_c), uneven blocks, on an MPI
 *                with those bindings (Open MPI 6; elsewhere it says so and
 *                passes): Open MPI 6 hands bufpool size_t counts, which
 *                the decision once read as a NULL int array (found by
 *                MPICH's coll/coll_large, a crash);
 *   persistent-fit  a persistent allreduce of 16 KiB and a bcast of 24
 *                KiB (above the 4 KiB of a call's own slots, so in the
 *                chunk segment's rounds), started --rounds times beside
 *                blocking calls of other sizes, with the node algorithms
 *                forced (--expect-node): results, and each request's chunk
 *                segment cut to its message (a ring of two rounds of it)
 *                rather than the plan's depth x segment that the
 *                communicator keeps for calls of every size: the segment
 *                bytes each request maps (coll_bufpool_node_segment_bytes)
 *                below what the communicator's first such call maps.
 *
 * --expect-bufpool: bufpool's counters must show that it served the
 * nonblocking or persistent calls of the case (run with
 * --mca coll_bufpool_rules_default off, where its own defaults serve
 * every size).  Exit status 0 when every check passed.
 */
#include "pcoll.h"
#include "pvar_util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, failures;
static bool expect_bufpool;
/* --expect-node[=N]: at least N node calls a round (start-order). */
static int expect_node;
static long rounds = -1;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (failures++ < 20) {                                                                 \
                fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__);                \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void mpi_ok(int rc, const char *what)
{
    if (MPI_SUCCESS != rc) {
        fprintf(stderr, "rank %d: %s returned %d\n", rank, what, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static unsigned long long counter(const char *name)
{
    unsigned long long v = 0;
    if (PVAR_OK != pvar_util_read(name, &v)) {
        CHECK(!expect_bufpool, "MPI_T variable %s not readable", name);
    }
    return v;
}

/* Expected sum over ranks of value(r, i) = (r + 1) * 1000 + i + salt. */
static long long expected_sum(long i, long salt)
{
    return (long long)size * (size + 1) / 2 * 1000 + (long long)size * (i + salt);
}

static void fill(long long *buf, long n, long salt)
{
    for (long i = 0; i < n; i++) {
        buf[i] = (long long)(rank + 1) * 1000 + i + salt;
    }
}

/* ---------------------------------------------------------------------- */

#define WRAP_COUNT    32768 /* 256 KiB of long long per call */
#define WRAP_INFLIGHT 6
#define WRAP_PERSIST  3

static void case_tag_wrap(void)
{
    MPI_Comm comm;
    mpi_ok(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    static long long precv[WRAP_PERSIST][WRAP_COUNT];
    static long long send[WRAP_INFLIGHT][WRAP_COUNT], recv[WRAP_INFLIGHT][WRAP_COUNT];
    MPI_Request preq[WRAP_PERSIST], req[WRAP_INFLIGHT];
    const unsigned long long init0 = counter("coll_bufpool_allreduce_init_calls");
    const unsigned long long nb0 = counter("coll_bufpool_iallreduce_calls");
    int npersist = 0;
    const long n = rounds > 0 ? rounds : 200;

    for (long round = 0; round < n; round++) {
        /* Persistent requests made at different points of the tag space:
         * the first before any wrap, the others after some. */
        if (npersist < WRAP_PERSIST && round == npersist * 7) {
            /* In place: its receives go through a window of scratch
             * slots, posted as segments complete, while the nonblocking
             * ones (out of place) post theirs at once; on a shared block
             * a message of one would match a receive of the other. */
            mpi_ok(PCOLL_INIT(Allreduce)(MPI_IN_PLACE, precv[npersist], WRAP_COUNT, MPI_LONG_LONG,
                                         MPI_SUM, comm, MPI_INFO_NULL, &preq[npersist]),
                   "MPI_Allreduce_init");
            npersist++;
        }
        for (int k = 0; k < npersist; k++) {
            fill(precv[k], WRAP_COUNT, 100000 * (k + 1) + round);
        }
        /* MPI lets each rank start persistent collectives in its own
         * order relative to other collectives (unless the communicator
         * asserts mpi_assert_strict_persistent_collective_ordering): the
         * even ranks start them first, the odd ranks last, so only their
         * tags keep their messages apart. */
        const bool start_first = 0 == rank % 2;
        if (start_first) {
            mpi_ok(MPI_Startall(npersist, preq), "MPI_Startall");
        }
        for (int k = 0; k < WRAP_INFLIGHT; k++) {
            fill(send[k], WRAP_COUNT, 7 * k + round);
            mpi_ok(
                MPI_Iallreduce(send[k], recv[k], WRAP_COUNT, MPI_LONG_LONG, MPI_SUM, comm, &req[k]),
                "MPI_Iallreduce");
        }
        if (!start_first) {
            mpi_ok(MPI_Startall(npersist, preq), "MPI_Startall");
        }
        mpi_ok(MPI_Waitall(WRAP_INFLIGHT, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
        mpi_ok(MPI_Waitall(npersist, preq, MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (int k = 0; k < WRAP_INFLIGHT; k++) {
            for (long i = 0; i < WRAP_COUNT; i++) {
                CHECK(recv[k][i] == expected_sum(i, 7 * k + round),
                      "round %ld iallreduce %d element %ld: %lld, expected %lld", round, k, i,
                      recv[k][i], expected_sum(i, 7 * k + round));
            }
        }
        for (int k = 0; k < npersist; k++) {
            for (long i = 0; i < WRAP_COUNT; i++) {
                CHECK(precv[k][i] == expected_sum(i, 100000 * (k + 1) + round),
                      "round %ld persistent %d element %ld: %lld, expected %lld", round, k, i,
                      precv[k][i], expected_sum(i, 100000 * (k + 1) + round));
            }
        }
    }
    if (expect_bufpool) {
        CHECK(counter("coll_bufpool_allreduce_init_calls") - init0 == WRAP_PERSIST,
              "bufpool did not serve the %d persistent requests", WRAP_PERSIST);
        CHECK(counter("coll_bufpool_iallreduce_calls") - nb0 >=
                  (unsigned long long)n * WRAP_INFLIGHT,
              "bufpool did not serve the MPI_Iallreduce calls");
    }
    for (int k = 0; k < npersist; k++) {
        mpi_ok(MPI_Request_free(&preq[k]), "MPI_Request_free");
    }
    mpi_ok(MPI_Comm_free(&comm), "MPI_Comm_free");
    if (0 == rank) {
        printf("tag-wrap: %ld rounds of %d persistent + %d nonblocking allreduces\n", n, npersist,
               WRAP_INFLIGHT);
    }
}

/* ---------------------------------------------------------------------- */

#define MANY_INFLIGHT 64
#define MANY_COUNT    64 /* ints per bcast */

/* The process's mapped size (VmSize), bytes; 0 if unknown. */
static unsigned long long vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kib = 0;
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "VmSize: %llu kB", &kib)) {
            break;
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return kib * 1024;
}

static void case_many(void)
{
    static int buf[MANY_INFLIGHT][MANY_COUNT];
    MPI_Request req[MANY_INFLIGHT];
    const long n = rounds > 0 ? rounds : 10000;
    const long settle = n < 100 ? n / 2 : 100;
    const unsigned long long calls0 = counter("coll_bufpool_ibcast_calls");
    (void)counter("coll_bufpool_nb_stacks_mapped"); /* counts from here */
    unsigned long long mapped_settled = 0, vm_settled = 0;
    for (long round = 0; round < n; round++) {
        for (int k = 0; k < MANY_INFLIGHT; k++) {
            const int root = (int)((round + k) % size);
            for (int i = 0; i < MANY_COUNT; i++) {
                buf[k][i] = rank == root ? (int)(round * 131 + k * 7 + i) : -1;
            }
            mpi_ok(MPI_Ibcast(buf[k], MANY_COUNT, MPI_INT, root, MPI_COMM_WORLD, &req[k]),
                   "MPI_Ibcast");
        }
        mpi_ok(MPI_Waitall(MANY_INFLIGHT, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (int k = 0; k < MANY_INFLIGHT; k++) {
            for (int i = 0; i < MANY_COUNT; i++) {
                CHECK(buf[k][i] == (int)(round * 131 + k * 7 + i),
                      "round %ld ibcast %d element %d: %d", round, k, i, buf[k][i]);
            }
        }
        if (round == settle) {
            mapped_settled = counter("coll_bufpool_nb_stacks_mapped");
            vm_settled = vm_size();
        }
    }
    const unsigned long long mapped = counter("coll_bufpool_nb_stacks_mapped");
    const unsigned long long vm = vm_size();
    if (expect_bufpool) {
        CHECK(counter("coll_bufpool_ibcast_calls") - calls0 ==
                  (unsigned long long)n * MANY_INFLIGHT,
              "bufpool did not serve every MPI_Ibcast");
        /* Flat: stacks are mapped only while more are in flight at once
         * than ever before, so never more than the most in flight. */
        CHECK(mapped <= MANY_INFLIGHT, "%llu stacks mapped for %d in flight", mapped,
              MANY_INFLIGHT);
    }
    /* Nothing grows per round: after the first rounds, only the stacks
     * mapped since (default size, with the guard region) and 1 MiB of
     * slack for the allocator. */
    const unsigned long long stack_bytes = (256 + 64) << 10;
    CHECK(vm <= vm_settled + (mapped - mapped_settled) * stack_bytes + (1u << 20),
          "mapped size grew from %llu to %llu bytes (%llu stacks mapped meanwhile)", vm_settled, vm,
          mapped - mapped_settled);
    if (0 == rank) {
        printf("many: %ld rounds of %d MPI_Ibcast in flight; stacks mapped %llu -> %llu, VmSize "
               "%llu -> %llu KiB\n",
               n, MANY_INFLIGHT, mapped_settled, mapped, vm_settled >> 10, vm >> 10);
    }
}

/* ---------------------------------------------------------------------- */

#define THREADS_CALLS 40
#define THREADS_COUNT 1024

static void slow_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const long long *a = in;
    long long *b = inout;
    usleep(2000); /* a slow operation: the other thread completes meanwhile */
    for (int i = 0; i < *len; i++) {
        b[i] += a[i];
    }
}

typedef struct handoff {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    MPI_Request req[THREADS_CALLS];
    int posted;
} handoff_t;

typedef struct completer {
    handoff_t *h;
    long long (*recv)[THREADS_COUNT];
} completer_t;

static void *complete_them(void *arg)
{
    completer_t *c = arg;
    for (int k = 0; k < THREADS_CALLS; k++) {
        pthread_mutex_lock(&c->h->lock);
        while (c->h->posted <= k) {
            pthread_cond_wait(&c->h->cond, &c->h->lock);
        }
        MPI_Request r = c->h->req[k];
        pthread_mutex_unlock(&c->h->lock);
        mpi_ok(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait (completer)");
        for (int i = 0; i < THREADS_COUNT; i++) {
            CHECK(c->recv[k][i] == expected_sum(i, 13 * k),
                  "call %d element %d: %lld, expected %lld", k, i, c->recv[k][i],
                  expected_sum(i, 13 * k));
        }
    }
    return NULL;
}

static void case_threads(int provided)
{
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) {
            printf("threads: MPI_THREAD_MULTIPLE not provided: skipped\n");
        }
        return;
    }
    static long long send[THREADS_CALLS][THREADS_COUNT], recv[THREADS_CALLS][THREADS_COUNT];
    MPI_Op op;
    MPI_Comm comm;
    mpi_ok(MPI_Op_create(slow_sum, 1, &op), "MPI_Op_create");
    mpi_ok(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    handoff_t h = {.posted = 0};
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.cond, NULL);
    completer_t c = {.h = &h, .recv = recv};
    pthread_t thread;
    const unsigned long long calls0 = counter("coll_bufpool_iallreduce_calls");
    pthread_create(&thread, NULL, complete_them, &c);
    for (int k = 0; k < THREADS_CALLS; k++) {
        fill(send[k], THREADS_COUNT, 13 * k);
        MPI_Request r;
        mpi_ok(MPI_Iallreduce(send[k], recv[k], THREADS_COUNT, MPI_LONG_LONG, op, comm, &r),
               "MPI_Iallreduce");
        pthread_mutex_lock(&h.lock);
        h.req[k] = r;
        h.posted++;
        pthread_cond_signal(&h.cond);
        pthread_mutex_unlock(&h.lock);
    }
    pthread_join(thread, NULL);
    if (expect_bufpool) {
        CHECK(counter("coll_bufpool_iallreduce_calls") - calls0 == THREADS_CALLS,
              "bufpool did not serve every MPI_Iallreduce");
    }
    mpi_ok(MPI_Comm_free(&comm), "MPI_Comm_free");
    mpi_ok(MPI_Op_free(&op), "MPI_Op_free");
    pthread_mutex_destroy(&h.lock);
    pthread_cond_destroy(&h.cond);
    if (0 == rank) {
        printf("threads: %d MPI_Iallreduce with a slow user operation started by one thread, "
               "completed by another\n",
               THREADS_CALLS);
    }
}

/* ---------------------------------------------------------------------- */

#define BIG_COUNT (256 * 1024) /* doubles: 2 MiB of frame at *len == count */

static void frame_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    /* A local array as large as the call: what a Fortran compiler makes of
     * an automatic array; far beyond a 256 KiB stack. */
    double tmp[*len];
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++) {
        tmp[i] = a[i] + b[i];
    }
    memcpy(b, tmp, sizeof(double) * (size_t)*len);
}

static void case_big_frame(void)
{
    double *send = malloc(sizeof(double) * BIG_COUNT), *recv = malloc(sizeof(double) * BIG_COUNT);
    MPI_Op op;
    MPI_Request req;
    mpi_ok(MPI_Op_create(frame_sum, 1, &op), "MPI_Op_create");
    const unsigned long long calls0 = counter("coll_bufpool_iallreduce_calls");
    for (long n = 1024; n <= BIG_COUNT; n *= 16) {
        for (long i = 0; i < n; i++) {
            send[i] = (double)(rank + 1) * 1000 + (double)i;
        }
        mpi_ok(MPI_Iallreduce(send, recv, (int)n, MPI_DOUBLE, op, MPI_COMM_WORLD, &req),
               "MPI_Iallreduce");
        mpi_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
        for (long i = 0; i < n; i++) {
            CHECK(recv[i] == (double)expected_sum(i, 0), "count %ld element %ld: %g", n, i,
                  recv[i]);
        }
    }
    if (expect_bufpool) {
        CHECK(counter("coll_bufpool_iallreduce_calls") - calls0 == 3,
              "bufpool did not serve the MPI_Iallreduce calls");
    }
    mpi_ok(MPI_Op_free(&op), "MPI_Op_free");
    free(send);
    free(recv);
    if (0 == rank) {
        printf("big-frame: MPI_Iallreduce up to %d doubles with a user operation whose frame "
               "holds *len doubles\n",
               BIG_COUNT);
    }
}

/* ---------------------------------------------------------------------- */

static void case_finalize(void)
{
    static long long send[1024], recv[1024], recv2[1024];
    static int bbuf[1024];
    MPI_Comm dup;
    mpi_ok(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
    MPI_Request req[3];
    const unsigned long long init0 =
        counter("coll_bufpool_allreduce_init_calls") + counter("coll_bufpool_bcast_init_calls");
    fill(send, 1024, 5);
    for (int i = 0; i < 1024; i++) {
        bbuf[i] = 0 == rank ? i * 3 : -1;
    }
    mpi_ok(PCOLL_INIT(Allreduce)(send, recv, 1024, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &req[0]),
           "MPI_Allreduce_init");
    mpi_ok(PCOLL_INIT(Bcast)(bbuf, 1024, MPI_INT, 0, dup, MPI_INFO_NULL, &req[1]),
           "MPI_Bcast_init");
    mpi_ok(PCOLL_INIT(Allreduce)(send, recv2, 1024, MPI_LONG_LONG, MPI_SUM, dup, MPI_INFO_NULL,
                                 &req[2]),
           "MPI_Allreduce_init");
    mpi_ok(MPI_Startall(3, req), "MPI_Startall");
    mpi_ok(MPI_Waitall(3, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (int i = 0; i < 1024; i++) {
        CHECK(recv[i] == expected_sum(i, 5) && recv2[i] == recv[i], "allreduce element %d", i);
        CHECK(bbuf[i] == i * 3, "bcast element %d", i);
    }
    if (expect_bufpool) {
        CHECK(counter("coll_bufpool_allreduce_init_calls") +
                      counter("coll_bufpool_bcast_init_calls") - init0 ==
                  3,
              "bufpool did not serve the 3 persistent requests");
    }
    /* The communicator goes; the requests stay, never freed. */
    mpi_ok(MPI_Comm_free(&dup), "MPI_Comm_free");
    if (0 == rank) {
        printf("finalize: 3 persistent requests left allocated at MPI_Finalize\n");
    }
}

/* ---------------------------------------------------------------------- */

/* Free n persistent requests and their communicator; with the node
 * algorithms, every segment they mapped must be gone (bytes0: the segment
 * bytes mapped before they were made). */
static void free_all(MPI_Request *req, int n, MPI_Comm *comm, unsigned long long bytes0)
{
    for (int k = 0; k < n; k++) {
        mpi_ok(MPI_Request_free(&req[k]), "MPI_Request_free");
    }
    mpi_ok(MPI_Comm_free(comm), "MPI_Comm_free");
    if (expect_node) {
        CHECK(counter("coll_bufpool_node_segment_bytes") == bytes0,
              "segments left mapped: %llu bytes, %llu before",
              counter("coll_bufpool_node_segment_bytes"), bytes0);
    }
}

#define ORDER_SMALL 64    /* long long: the small slots          */
#define ORDER_LARGE 32768 /* long long: 256 KiB, the chunk rounds */
#define ORDER_BLOCK 256   /* ints per rank of the allgather       */
#define ORDER_REQS  7

static void case_start_order(void)
{
    MPI_Comm comm;
    mpi_ok(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    const unsigned long long calls0 = counter("coll_bufpool_node_calls");
    const unsigned long long fallbacks0 = counter("coll_bufpool_node_fallbacks");
    const unsigned long long bytes0 = counter("coll_bufpool_node_segment_bytes");
    static long long small_in[ORDER_SMALL], small_out[ORDER_SMALL], scan_out[ORDER_SMALL];
    static long long large_in[ORDER_LARGE], large_out[ORDER_LARGE], red_out[ORDER_LARGE];
    static long long blk_in[ORDER_SMALL], blk_out[ORDER_SMALL];
    static int bcast_buf[1024], ag_in[ORDER_BLOCK], *ag_out;
    ag_out = malloc((size_t)size * ORDER_BLOCK * sizeof(int));
    if (NULL == ag_out) {
        mpi_ok(MPI_ERR_NO_MEM, "malloc");
    }
    const int bcast_root = 1 % size;
    MPI_Request req[ORDER_REQS];
    mpi_ok(PCOLL_INIT(Allreduce)(small_in, small_out, ORDER_SMALL, MPI_LONG_LONG, MPI_SUM, comm,
                                 MPI_INFO_NULL, &req[0]),
           "MPI_Allreduce_init");
    mpi_ok(PCOLL_INIT(Allreduce)(large_in, large_out, ORDER_LARGE, MPI_LONG_LONG, MPI_SUM, comm,
                                 MPI_INFO_NULL, &req[1]),
           "MPI_Allreduce_init");
    mpi_ok(PCOLL_INIT(Bcast)(bcast_buf, 1024, MPI_INT, bcast_root, comm, MPI_INFO_NULL, &req[2]),
           "MPI_Bcast_init");
    mpi_ok(PCOLL_INIT(Reduce)(large_in, red_out, ORDER_LARGE, MPI_LONG_LONG, MPI_SUM, 0, comm,
                              MPI_INFO_NULL, &req[3]),
           "MPI_Reduce_init");
    mpi_ok(PCOLL_INIT(Allgather)(ag_in, ORDER_BLOCK, MPI_INT, ag_out, ORDER_BLOCK, MPI_INT, comm,
                                 MPI_INFO_NULL, &req[4]),
           "MPI_Allgather_init");
    mpi_ok(PCOLL_INIT(Barrier)(comm, MPI_INFO_NULL, &req[5]), "MPI_Barrier_init");
    mpi_ok(PCOLL_INIT(Scan)(small_in, scan_out, ORDER_SMALL, MPI_LONG_LONG, MPI_SUM, comm,
                            MPI_INFO_NULL, &req[6]),
           "MPI_Scan_init");
    const long n = rounds > 0 ? rounds : 50;
    for (long round = 0; round < n; round++) {
        fill(small_in, ORDER_SMALL, round);
        fill(large_in, ORDER_LARGE, 3 * round);
        fill(blk_in, ORDER_SMALL, 5 * round);
        for (int i = 0; i < 1024; i++) {
            bcast_buf[i] = rank == bcast_root ? (int)(i * 7 + round) : -1;
        }
        for (int i = 0; i < ORDER_BLOCK; i++) {
            ag_in[i] = rank * 100000 + i + (int)round;
        }
        const bool blocking_first = 0 == rank % 2;
        if (blocking_first) {
            mpi_ok(MPI_Allreduce(blk_in, blk_out, ORDER_SMALL, MPI_LONG_LONG, MPI_SUM, comm),
                   "MPI_Allreduce");
        }
        /* Each rank its own order, changing every round: a rotation, and
         * reversed on the odd ranks. */
        for (int k = 0; k < ORDER_REQS; k++) {
            const int j = (int)((k + rank + round) % ORDER_REQS);
            mpi_ok(MPI_Start(&req[1 == rank % 2 ? ORDER_REQS - 1 - j : j]), "MPI_Start");
        }
        if (!blocking_first) {
            mpi_ok(MPI_Allreduce(blk_in, blk_out, ORDER_SMALL, MPI_LONG_LONG, MPI_SUM, comm),
                   "MPI_Allreduce");
        }
        mpi_ok(MPI_Waitall(ORDER_REQS, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (long i = 0; i < ORDER_SMALL; i++) {
            CHECK(small_out[i] == expected_sum(i, round), "round %ld allreduce element %ld", round,
                  i);
            CHECK(blk_out[i] == expected_sum(i, 5 * round), "round %ld blocking element %ld", round,
                  i);
            const long long prefix =
                (long long)(rank + 1) * (rank + 2) / 2 * 1000 + (long long)(rank + 1) * (i + round);
            CHECK(scan_out[i] == prefix, "round %ld scan element %ld", round, i);
        }
        for (long i = 0; i < ORDER_LARGE; i++) {
            CHECK(large_out[i] == expected_sum(i, 3 * round), "round %ld large element %ld", round,
                  i);
            CHECK(0 != rank || red_out[i] == expected_sum(i, 3 * round),
                  "round %ld reduce element %ld", round, i);
        }
        for (int i = 0; i < 1024; i++) {
            CHECK(bcast_buf[i] == (int)(i * 7 + round), "round %ld bcast element %d", round, i);
        }
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < ORDER_BLOCK; i++) {
                CHECK(ag_out[r * ORDER_BLOCK + i] == r * 100000 + i + (int)round,
                      "round %ld allgather block %d element %d", round, r, i);
            }
        }
    }
    if (expect_node) {
        CHECK(counter("coll_bufpool_node_calls") - calls0 >= (unsigned long long)(n * expect_node),
              "fewer than %d calls a round ran over node segments", expect_node);
        CHECK(counter("coll_bufpool_node_fallbacks") == fallbacks0,
              "node calls ran point-to-point instead");
    }
    free_all(req, ORDER_REQS, &comm, bytes0);
    free(ag_out);
    if (0 == rank) {
        printf("start-order: %ld rounds of %d persistent requests started in each rank's order\n",
               n, ORDER_REQS);
    }
}

/* ---------------------------------------------------------------------- */

static void case_large_count(void)
{
#if MPI_VERSION >= 4
    enum { BLOCK = 37 };
    const unsigned long long served0 = counter("coll_bufpool_ireduce_scatter_calls") +
                                       counter("coll_bufpool_reduce_scatter_init_calls");
    MPI_Count *counts = malloc((size_t)size * sizeof(*counts));
    if (NULL == counts) {
        mpi_ok(MPI_ERR_NO_MEM, "malloc");
    }
    long n = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = BLOCK + r; /* uneven blocks */
        n += (long)counts[r];
    }
    long first = 0;
    for (int r = 0; r < rank; r++) {
        first += (long)counts[r];
    }
    long long *in = malloc((size_t)n * sizeof(*in)), *out = malloc((size_t)n * sizeof(*out));
    if (NULL == in || NULL == out) {
        mpi_ok(MPI_ERR_NO_MEM, "malloc");
    }
    MPI_Request preq;
    mpi_ok(MPI_Reduce_scatter_init_c(in, out, counts, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD,
                                     MPI_INFO_NULL, &preq),
           "MPI_Reduce_scatter_init_c");
    const long nrounds = rounds > 0 ? rounds : 20;
    for (long round = 0; round < nrounds; round++) {
        for (int form = 0; form < 3; form++) {
            fill(in, n, 11 * round + form);
            MPI_Request req;
            if (0 == form) {
                mpi_ok(
                    MPI_Reduce_scatter_c(in, out, counts, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD),
                    "MPI_Reduce_scatter_c");
            } else if (1 == form) {
                mpi_ok(MPI_Ireduce_scatter_c(in, out, counts, MPI_LONG_LONG, MPI_SUM,
                                             MPI_COMM_WORLD, &req),
                       "MPI_Ireduce_scatter_c");
                mpi_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
            } else {
                mpi_ok(MPI_Start(&preq), "MPI_Start");
                mpi_ok(MPI_Wait(&preq, MPI_STATUS_IGNORE), "MPI_Wait");
            }
            for (long i = 0; i < (long)counts[rank]; i++) {
                CHECK(out[i] == expected_sum(first + i, 11 * round + form),
                      "round %ld form %d element %ld: %lld, expected %lld", round, form, i, out[i],
                      expected_sum(first + i, 11 * round + form));
            }
        }
    }
    mpi_ok(MPI_Request_free(&preq), "MPI_Request_free");
    if (expect_bufpool) {
        CHECK(counter("coll_bufpool_ireduce_scatter_calls") +
                      counter("coll_bufpool_reduce_scatter_init_calls") - served0 ==
                  (unsigned long long)nrounds + 1,
              "bufpool did not serve the nonblocking and persistent calls");
    }
    free(counts);
    free(in);
    free(out);
    if (0 == rank) {
        printf("large-count: %ld rounds of reduce_scatter with MPI_Count counts in three forms\n",
               nrounds);
    }
#else
    if (0 == rank) {
        printf("large-count: this MPI has no MPI 4 large-count bindings (MPI_VERSION %d): "
               "nothing to check\n",
               MPI_VERSION);
    }
#endif
}

/* ---------------------------------------------------------------------- */

#define FIT_REDUCE 2048 /* long long: 16 KiB */
#define FIT_BCAST  6144 /* int: 24 KiB */

static void case_persistent_fit(void)
{
    static long long in[FIT_REDUCE], out[FIT_REDUCE], big_in[4 * FIT_REDUCE],
        big_out[4 * FIT_REDUCE];
    static int bcast_buf[FIT_BCAST];
    MPI_Comm comm;
    mpi_ok(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    const unsigned long long bytes0 = counter("coll_bufpool_node_segment_bytes");
    MPI_Request req[2];
    mpi_ok(PCOLL_INIT(Allreduce)(in, out, FIT_REDUCE, MPI_LONG_LONG, MPI_SUM, comm, MPI_INFO_NULL,
                                 &req[0]),
           "allreduce init");
    mpi_ok(PCOLL_INIT(Bcast)(bcast_buf, FIT_BCAST, MPI_INT, 0, comm, MPI_INFO_NULL, &req[1]),
           "bcast init");
    const long n = rounds > 0 ? rounds : 50;
    unsigned long long requests = 0, communicator = 0;
    for (long round = 0; round < n; round++) {
        fill(in, FIT_REDUCE, round);
        for (int i = 0; i < FIT_BCAST; i++) {
            bcast_buf[i] = 0 == rank ? (int)(i * 5 + round) : -1;
        }
        mpi_ok(MPI_Startall(2, req), "MPI_Startall");
        mpi_ok(MPI_Waitall(2, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
        if (0 == round) {
            requests = counter("coll_bufpool_node_segment_bytes") - bytes0;
        }
        /* The communicator's own segments, by calls of other sizes between
         * the starts: 64 KiB, then 16 KiB again. */
        const long big = 0 == round % 2 ? 4 * FIT_REDUCE : FIT_REDUCE;
        fill(big_in, big, round + 1);
        mpi_ok(MPI_Allreduce(big_in, big_out, (int)big, MPI_LONG_LONG, MPI_SUM, comm),
               "MPI_Allreduce");
        if (0 == round) {
            communicator = counter("coll_bufpool_node_segment_bytes") - bytes0 - requests;
        }
        for (long i = 0; i < FIT_REDUCE; i++) {
            CHECK(out[i] == expected_sum(i, round), "round %ld persistent element %ld", round, i);
        }
        for (long i = 0; i < big; i++) {
            CHECK(big_out[i] == expected_sum(i, round + 1), "round %ld blocking element %ld", round,
                  i);
        }
        for (int i = 0; i < FIT_BCAST; i++) {
            CHECK(bcast_buf[i] == (int)(i * 5 + round), "round %ld bcast element %d", round, i);
        }
    }
    if (expect_node) {
        /* Each request: its call segment and a chunk ring of 2 x its
         * message; the communicator: the same call segment and a ring of
         * the plan's depth x segment (at least 2 x 64 KiB). */
        CHECK(requests > 0 && communicator > 0 && requests / 2 < communicator,
              "a persistent request's segments (%llu bytes for two) are not smaller than the "
              "communicator's (%llu)",
              requests, communicator);
    }
    free_all(req, 2, &comm, bytes0);
    if (0 == rank) {
        printf("persistent-fit: %ld rounds; segment bytes of two persistent requests %llu, of the "
               "communicator %llu\n",
               n, requests, communicator);
    }
}

/* ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *which = NULL;
    for (int i = 1; i < argc; i++) {
        if (0 == strncmp(argv[i], "--case=", 7)) {
            which = argv[i] + 7;
        } else if (0 == strcmp(argv[i], "--expect-bufpool")) {
            expect_bufpool = true;
        } else if (0 == strcmp(argv[i], "--expect-node")) {
            expect_node = ORDER_REQS + 1;
        } else if (0 == strncmp(argv[i], "--expect-node=", 14)) {
            expect_node = atoi(argv[i] + 14);
        } else if (0 == strncmp(argv[i], "--rounds=", 9)) {
            rounds = atol(argv[i] + 9);
        } else {
            fprintf(stderr,
                    "usage: %s "
                    "--case=tag-wrap|many|threads|big-frame|finalize|start-order|large-count|"
                    "persistent-fit "
                    "[--rounds=N] [--expect-bufpool] [--expect-node[=N]]\n",
                    argv[0]);
            return 2;
        }
    }
    if (NULL == which) {
        fprintf(stderr, "%s: --case=NAME is required\n", argv[0]);
        return 2;
    }
    int provided = MPI_THREAD_SINGLE;
    const bool threads = 0 == strcmp(which, "threads");
    mpi_ok(
        MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided),
        "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (PVAR_OK != pvar_util_init()) {
        CHECK(!expect_bufpool, "MPI_T unavailable");
    }
    if (0 == strcmp(which, "tag-wrap")) {
        case_tag_wrap();
    } else if (0 == strcmp(which, "many")) {
        case_many();
    } else if (threads) {
        case_threads(provided);
    } else if (0 == strcmp(which, "big-frame")) {
        case_big_frame();
    } else if (0 == strcmp(which, "finalize")) {
        case_finalize();
    } else if (0 == strcmp(which, "start-order")) {
        case_start_order();
    } else if (0 == strcmp(which, "large-count")) {
        case_large_count();
    } else if (0 == strcmp(which, "persistent-fit")) {
        case_persistent_fit();
    } else {
        fprintf(stderr, "%s: unknown case %s\n", argv[0], which);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    pvar_util_finalize();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_coll_nb_hazards --case=%s at %d ranks: %s: %d failed checks\n", which, size,
               0 == all ? "PASS" : "FAIL", all);
    }
    MPI_Finalize();
    return 0 == all ? 0 : 1;
}
