/*
 * Every rank makes the same choice: calls whose ranks pass arguments that
 * MPI allows to differ between them (docs/collectives.md, "Every rank
 * makes the same choice"), each followed by nonblocking collectives on the
 * same communicator (a rank that served a call the others handed back
 * reserves other tags, and those would hang or mix).  Every result is
 * checked exactly; a hang is caught by run-mpi-test.sh's timeout.
 *
 *   alltoall      rank 0 describes its send blocks as 1 x contiguous(n,
 *                 int), the others as n x int (same type signature), and
 *                 then rank 1 alone describes its receive blocks with a
 *                 resized type of the same signature; n = 1, 4, 1024 and
 *                 65536, in the blocking, nonblocking and persistent forms
 *                 (a hang at 2 ranks, and MPI_ERR_IN_STATUS at 16 ranks on
 *                 two pretended hosts, before the fix);
 *   layouts       allreduce, reduce, reduce_scatter_block, scan and exscan
 *                 with a user-defined operation, the odd ranks describing
 *                 each element with a resized type of larger extent (same
 *                 signature): messages of several segments must be cut
 *                 alike on every rank; every form;
 *   inplace       scan and exscan with MPI_IN_PLACE on the odd ranks only
 *                 (each rank's own choice), every form;
 *   rooted        gather and scatter with insignificant arguments that
 *                 differ: garbage receive count and type at gather's
 *                 non-roots, a NULL send buffer and garbage count at
 *                 scatter's, MPI_IN_PLACE at the root; every form.
 * --case=all runs them all.  Exit status 0 when every check passed.
 */
#include "pcoll.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures;
static long checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
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
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

enum form { BLOCKING, NONBLOCKING, PERSISTENT_FORM, NFORMS };
static const char *const form_names[NFORMS] = {"blocking", "nonblocking", "persistent"};

/* Complete a nonblocking call, or start a persistent one starts times
 * (every rank alike) and free it. */
static void finish_starts(enum form f, MPI_Request *req, int starts)
{
    if (NONBLOCKING == f) {
        mpi_ok(MPI_Wait(req, MPI_STATUS_IGNORE), "MPI_Wait");
    } else if (PERSISTENT_FORM == f) {
        for (int start = 0; start < starts; start++) {
            mpi_ok(MPI_Start(req), "MPI_Start");
            mpi_ok(MPI_Wait(req, MPI_STATUS_IGNORE), "MPI_Wait");
        }
        mpi_ok(MPI_Request_free(req), "MPI_Request_free");
    }
}

/* The same inputs give the same result: two starts. */
static void finish(enum form f, MPI_Request *req)
{
    finish_starts(f, req, 2);
}

/* After each call: nonblocking allreduces on the same communicator, in
 * flight together, whose tags must still agree between the ranks. */
static void tags_still_agree(MPI_Comm comm, const char *after)
{
    enum { N = 3, COUNT = 64 };
    int in[N][COUNT], out[N][COUNT];
    MPI_Request req[N];
    for (int k = 0; k < N; k++) {
        for (int i = 0; i < COUNT; i++) {
            in[k][i] = rank * 100 + k * 10 + i;
        }
        mpi_ok(MPI_Iallreduce(in[k], out[k], COUNT, MPI_INT, MPI_SUM, comm, &req[k]),
               "MPI_Iallreduce");
    }
    mpi_ok(MPI_Waitall(N, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (int k = 0; k < N; k++) {
        for (int i = 0; i < COUNT; i++) {
            const int want = 100 * size * (size - 1) / 2 + size * (k * 10 + i);
            CHECK(out[k][i] == want, "after %s: iallreduce %d element %d: %d, expected %d", after,
                  k, i, out[k][i], want);
        }
    }
}

/* ---------------------------------------------------------------------- */

static int a2a_value(int src, int dst, int n, int i)
{
    return src * 1000003 + dst * n + i;
}

static void case_alltoall(void)
{
    static const int ns[] = {1, 4, 1024, 65536};
    for (size_t t = 0; t < sizeof(ns) / sizeof(*ns); t++) {
        const int n = ns[t];
        int *s = malloc(sizeof(int) * (size_t)n * (size_t)size);
        int *r = malloc(sizeof(int) * (size_t)n * (size_t)size);
        MPI_Datatype block, rblock;
        mpi_ok(MPI_Type_contiguous(n, MPI_INT, &block), "MPI_Type_contiguous");
        mpi_ok(MPI_Type_commit(&block), "MPI_Type_commit");
        /* The same elements, another handle (and type map object). */
        mpi_ok(MPI_Type_create_resized(block, 0, (MPI_Aint)sizeof(int) * n, &rblock),
               "MPI_Type_create_resized");
        mpi_ok(MPI_Type_commit(&rblock), "MPI_Type_commit");
        for (int variant = 0; variant < 2; variant++) {
            for (int f = 0; f < NFORMS; f++) {
                for (int i = 0; i < n * size; i++) {
                    s[i] = a2a_value(rank, i / n, n, i % n);
                    r[i] = -1;
                }
                /* variant 0: rank 0 sends 1 x block; variant 1: every rank
                 * sends n x int and rank 1 receives 1 x rblock. */
                const bool block_send = 0 == variant && 0 == rank;
                const bool block_recv = 1 == variant && 1 == rank;
                MPI_Request req = MPI_REQUEST_NULL;
                const int sc = block_send ? 1 : n, rc = block_recv ? 1 : n;
                MPI_Datatype st = block_send ? block : MPI_INT, rt = block_recv ? rblock : MPI_INT;
                if (BLOCKING == f) {
                    mpi_ok(MPI_Alltoall(s, sc, st, r, rc, rt, MPI_COMM_WORLD), "MPI_Alltoall");
                } else if (NONBLOCKING == f) {
                    mpi_ok(MPI_Ialltoall(s, sc, st, r, rc, rt, MPI_COMM_WORLD, &req),
                           "MPI_Ialltoall");
                } else {
                    mpi_ok(PCOLL_INIT(Alltoall)(s, sc, st, r, rc, rt, MPI_COMM_WORLD, MPI_INFO_NULL,
                                                &req),
                           "MPI_Alltoall_init");
                }
                finish((enum form)f, &req);
                int bad = 0;
                for (int src = 0; src < size; src++) {
                    for (int i = 0; i < n; i++) {
                        bad += r[src * n + i] != a2a_value(src, rank, n, i);
                    }
                }
                CHECK(0 == bad, "alltoall n=%d variant %d %s: %d wrong elements", n, variant,
                      form_names[f], bad);
                tags_still_agree(MPI_COMM_WORLD, "alltoall");
            }
        }
        MPI_Type_free(&block);
        MPI_Type_free(&rblock);
        free(s);
        free(r);
    }
}

/* ---------------------------------------------------------------------- */
/* Reductions whose ranks lay their elements out differently.  The user
 * operation reads both operands through the datatype it is given (each
 * rank's own): long longs at a stride of the type's extent. */

static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*dt, &lb, &extent);
    for (int i = 0; i < *len; i++) {
        const long long *a = (const long long *)((const char *)in + i * extent);
        long long *b = (long long *)((char *)inout + i * extent);
        *b += *a;
    }
}

static long long red_value(int r, long i)
{
    return (long long)(r + 1) * 1000 + i;
}

static void case_layouts(void)
{
    /* 40000 elements: 320 KB of signature, three 128 KiB segments. */
    const long counts[] = {1, 700, 40000};
    MPI_Op op;
    MPI_Datatype padded;
    mpi_ok(MPI_Op_create(strided_sum, 1, &op), "MPI_Op_create");
    mpi_ok(MPI_Type_create_resized(MPI_LONG_LONG, 0, 2 * sizeof(long long), &padded),
           "MPI_Type_create_resized");
    mpi_ok(MPI_Type_commit(&padded), "MPI_Type_commit");
    const bool mine_padded = 1 == rank % 2;
    const MPI_Datatype dt = mine_padded ? padded : MPI_LONG_LONG;
    const int stride = mine_padded ? 2 : 1;
    for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
        const long n = counts[c], total = n * size;
        long long *s = calloc((size_t)(total * stride), sizeof(long long));
        long long *r = calloc((size_t)(total * stride), sizeof(long long));
        static const char *const names[] = {"allreduce", "reduce", "reduce_scatter_block", "scan",
                                            "exscan"};
        for (int coll = 0; coll < 5; coll++) {
            for (int f = 0; f < NFORMS; f++) {
                const long elems = 2 == coll ? total : n; /* reduce_scatter_block: all blocks */
                for (long i = 0; i < elems; i++) {
                    s[i * stride] = red_value(rank, i);
                    r[i * stride] = -1;
                    if (2 == stride) {
                        s[i * stride + 1] = r[i * stride + 1] = 0x5a5a5a5a; /* gaps */
                    }
                }
                MPI_Request req = MPI_REQUEST_NULL;
                MPI_Request *rq = BLOCKING == f ? NULL : &req;
                int rc = MPI_SUCCESS;
#define CALL3(name, iname, ...)                                                                    \
    (BLOCKING == f      ? MPI_##name(__VA_ARGS__)                                                  \
     : NONBLOCKING == f ? MPI_##iname(__VA_ARGS__, rq)                                             \
                        : PCOLL_INIT(name)(__VA_ARGS__, MPI_INFO_NULL, rq))
                switch (coll) {
                    case 0:
                        rc = CALL3(Allreduce, Iallreduce, s, r, (int)n, dt, op, MPI_COMM_WORLD);
                        break;
                    case 1:
                        rc = CALL3(Reduce, Ireduce, s, r, (int)n, dt, op, 0, MPI_COMM_WORLD);
                        break;
                    case 2:
                        rc = CALL3(Reduce_scatter_block, Ireduce_scatter_block, s, r, (int)n, dt,
                                   op, MPI_COMM_WORLD);
                        break;
                    case 3:
                        rc = CALL3(Scan, Iscan, s, r, (int)n, dt, op, MPI_COMM_WORLD);
                        break;
                    default:
                        rc = CALL3(Exscan, Iexscan, s, r, (int)n, dt, op, MPI_COMM_WORLD);
                        break;
                }
#undef CALL3
                mpi_ok(rc, names[coll]);
                finish((enum form)f, &req);
                /* Ranks contributing to my result, and my block's offset. */
                int lo = 0, hi = size - 1;
                long off = 0;
                bool check = true;
                if (1 == coll) {
                    check = 0 == rank;
                } else if (2 == coll) {
                    off = rank * n;
                } else if (3 == coll) {
                    hi = rank;
                } else if (4 == coll) {
                    hi = rank - 1;
                    check = rank > 0;
                }
                int bad = 0, gaps = 0;
                for (long i = 0; check && i < n; i++) {
                    long long want = 0;
                    for (int q = lo; q <= hi; q++) {
                        want += red_value(q, off + i);
                    }
                    bad += r[i * stride] != want;
                    gaps += 2 == stride && 0x5a5a5a5a != r[i * stride + 1];
                }
                CHECK(0 == bad && 0 == gaps, "%s of %ld %s: %d wrong elements, %d gaps written",
                      names[coll], n, form_names[f], bad, gaps);
                tags_still_agree(MPI_COMM_WORLD, names[coll]);
            }
        }
        free(s);
        free(r);
    }
    MPI_Type_free(&padded);
    MPI_Op_free(&op);
}

/* ---------------------------------------------------------------------- */

static void case_inplace(void)
{
    const long counts[] = {1, 3000, 40000};
    for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
        const long n = counts[c];
        long long *s = malloc(sizeof(long long) * (size_t)n);
        long long *r = malloc(sizeof(long long) * (size_t)n);
        for (int ex = 0; ex < 2; ex++) {
            for (int f = 0; f < NFORMS; f++) {
                const bool in_place = 1 == rank % 2;
                for (long i = 0; i < n; i++) {
                    s[i] = red_value(rank, i);
                    r[i] = in_place ? red_value(rank, i) : -1;
                }
                const void *sbuf = in_place ? MPI_IN_PLACE : (const void *)s;
                MPI_Request req = MPI_REQUEST_NULL;
                int rc;
                if (BLOCKING == f) {
                    rc = ex ? MPI_Exscan(sbuf, r, (int)n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD)
                            : MPI_Scan(sbuf, r, (int)n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
                } else if (NONBLOCKING == f) {
                    rc = ex ? MPI_Iexscan(sbuf, r, (int)n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD,
                                          &req)
                            : MPI_Iscan(sbuf, r, (int)n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD,
                                        &req);
                } else {
                    rc = ex ? PCOLL_INIT(Exscan)(sbuf, r, (int)n, MPI_LONG_LONG, MPI_SUM,
                                                 MPI_COMM_WORLD, MPI_INFO_NULL, &req)
                            : PCOLL_INIT(Scan)(sbuf, r, (int)n, MPI_LONG_LONG, MPI_SUM,
                                               MPI_COMM_WORLD, MPI_INFO_NULL, &req);
                }
                mpi_ok(rc, ex ? "exscan" : "scan");
                /* In place, a second start would scan the first's result:
                 * one start, on every rank. */
                finish_starts((enum form)f, &req, 1);
                int bad = 0;
                const int hi = ex ? rank - 1 : rank;
                for (long i = 0; (ex ? rank > 0 : true) && i < n; i++) {
                    long long want = 0;
                    for (int q = 0; q <= hi; q++) {
                        want += red_value(q, i);
                    }
                    bad += r[i] != want;
                }
                CHECK(0 == bad, "%s of %ld, in place on odd ranks, %s: %d wrong elements",
                      ex ? "exscan" : "scan", n, form_names[f], bad);
                tags_still_agree(MPI_COMM_WORLD, ex ? "exscan" : "scan");
            }
        }
        free(s);
        free(r);
    }
}

/* ---------------------------------------------------------------------- */

static void case_rooted(void)
{
    const int counts[] = {1, 5000, 70000};
    for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
        const int n = counts[c];
        int *mine = malloc(sizeof(int) * (size_t)n);
        int *all = malloc(sizeof(int) * (size_t)n * (size_t)size);
        for (int root = 0; root < size && root < 2; root++) {
            for (int scatter = 0; scatter < 2; scatter++) {
                for (int f = 0; f < NFORMS; f++) {
                    const bool is_root = rank == root;
                    const bool in_place = is_root && 1 == (n + f) % 2;
                    for (int i = 0; i < n; i++) {
                        mine[i] = scatter ? -1 : rank * 1000 + i;
                    }
                    for (int i = 0; i < n * size; i++) {
                        all[i] = scatter ? (i / n) * 1000 + i % n : -1;
                    }
                    if (in_place && !scatter) {
                        memcpy(all + (size_t)root * n, mine, sizeof(int) * (size_t)n);
                    }
                    /* Insignificant at non-roots: garbage receive count and
                     * type (gather), a NULL buffer and garbage count
                     * (scatter); at the root in place, the own block's
                     * count and type. */
                    const int junk = 7 + rank;
                    MPI_Request req = MPI_REQUEST_NULL;
                    int rc;
                    if (!scatter) {
                        const void *sb = in_place ? MPI_IN_PLACE : (const void *)mine;
                        const int sc = in_place ? junk : n;
                        const MPI_Datatype st = in_place ? MPI_DATATYPE_NULL : MPI_INT;
                        void *rb = is_root ? all : NULL;
                        const int rcnt = is_root ? n : junk;
                        const MPI_Datatype rt = is_root ? MPI_INT : MPI_DATATYPE_NULL;
                        rc = BLOCKING == f
                                 ? MPI_Gather(sb, sc, st, rb, rcnt, rt, root, MPI_COMM_WORLD)
                             : NONBLOCKING == f
                                 ? MPI_Igather(sb, sc, st, rb, rcnt, rt, root, MPI_COMM_WORLD, &req)
                                 : PCOLL_INIT(Gather)(sb, sc, st, rb, rcnt, rt, root,
                                                      MPI_COMM_WORLD, MPI_INFO_NULL, &req);
                    } else {
                        const void *sb = is_root ? all : NULL;
                        const int sc = is_root ? n : junk;
                        const MPI_Datatype st = is_root ? MPI_INT : MPI_DATATYPE_NULL;
                        void *rb = in_place ? MPI_IN_PLACE : mine;
                        const int rcnt = in_place ? junk : n;
                        const MPI_Datatype rt = in_place ? MPI_DATATYPE_NULL : MPI_INT;
                        rc =
                            BLOCKING == f
                                ? MPI_Scatter(sb, sc, st, rb, rcnt, rt, root, MPI_COMM_WORLD)
                            : NONBLOCKING == f
                                ? MPI_Iscatter(sb, sc, st, rb, rcnt, rt, root, MPI_COMM_WORLD, &req)
                                : PCOLL_INIT(Scatter)(sb, sc, st, rb, rcnt, rt, root,
                                                      MPI_COMM_WORLD, MPI_INFO_NULL, &req);
                    }
                    mpi_ok(rc, scatter ? "scatter" : "gather");
                    finish((enum form)f, &req);
                    int bad = 0;
                    if (!scatter && is_root) {
                        for (int i = 0; i < n * size; i++) {
                            bad += all[i] != (i / n) * 1000 + i % n;
                        }
                    } else if (scatter && !in_place) {
                        for (int i = 0; i < n; i++) {
                            bad += mine[i] != rank * 1000 + i;
                        }
                    }
                    CHECK(0 == bad, "%s of %d, root %d%s, %s: %d wrong elements",
                          scatter ? "scatter" : "gather", n, root, in_place ? " in place" : "",
                          form_names[f], bad);
                    tags_still_agree(MPI_COMM_WORLD, scatter ? "scatter" : "gather");
                }
            }
        }
        free(mine);
        free(all);
    }
}

/* ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *which = "all";
    for (int i = 1; i < argc; i++) {
        if (0 == strncmp(argv[i], "--case=", 7)) {
            which = argv[i] + 7;
        } else {
            fprintf(stderr, "usage: %s [--case=all|alltoall|layouts|inplace|rooted]\n", argv[0]);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const bool all = 0 == strcmp(which, "all");
    bool known = all;
    if (all || 0 == strcmp(which, "alltoall")) {
        case_alltoall();
        known = true;
    }
    if (all || 0 == strcmp(which, "layouts")) {
        case_layouts();
        known = true;
    }
    if (all || 0 == strcmp(which, "inplace")) {
        case_inplace();
        known = true;
    }
    if (all || 0 == strcmp(which, "rooted")) {
        case_rooted();
        known = true;
    }
    if (!known) {
        if (0 == rank) {
            fprintf(stderr, "%s: unknown case %s\n", argv[0], which);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bad = 0;
    long total = 0;
    MPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_coll_consistency --case=%s at %d ranks: %s: %ld checks, %d failed\n", which,
               size, 0 == bad ? "PASS" : "FAIL", total, bad);
    }
    MPI_Finalize();
    return 0 == bad ? 0 : 1;
}
