/*
 * A rank's own block in MPI_Gather, MPI_Scatter (the root's), MPI_Allgather
 * and MPI_Alltoall (every rank's), in the blocking, nonblocking and
 * persistent forms, between two different datatypes of the same signature
 * ({int, double} laid out two ways).
 *
 * Open MPI copies that block with ompi_datatype_sndrcv, which between two
 * different datatypes packs and unpacks 64 KiB at a time and loses the last
 * element's double when a 64 KiB boundary of the packed stream falls inside
 * an element (4.1.4, 5.0.10, 6.0.x; docs/reliability.md).  coll/bufpool's
 * hand-back copies such a block itself (bufpool_own_block_at_risk): before
 * the call, then MPI_IN_PLACE at the root of a gather or scatter and an
 * allgather's block sent from scratch laid out as the receive datatype;
 * after the call for an alltoall.  So this program, run with rules that
 * hand every one of these calls back (coll_own_block.sh), checks:
 *   - every element of every rank's result, bit for bit, on every root,
 *     both directions (the padded type as send or as receive type), with
 *     12-byte elements counted so the stream is under, just over and four
 *     times 64 KiB; a persistent request is started twice, its input
 *     changed between;
 *   - that no byte outside the data of a receive buffer changed (the gaps
 *     of its datatype and 64-byte zones around it);
 *   - the controls that need no copy: one datatype on both sides, the root
 *     (allgather, alltoall: every rank) passing MPI_IN_PLACE;
 *   - with --expect-copies, that coll_bufpool_own_block_copies grew at
 *     each rank by exactly its calls (persistent: starts) at risk (the
 *     root's, every rank's in allgather and alltoall), and that bufpool
 *     served none of these calls (each form's <coll>_calls unchanged): the
 *     hand-back did the work.
 * --coll NAME runs one collective only.
 * On stock Open MPI (--mca coll ^bufpool) the same program reports wrong
 * elements from 5462 elements on.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pcoll.h"
#include "pvar_util.h"

#define ZONE     64
#define SENTINEL 0x5A

/* A layout of {int, double}: where each field lies in an element, relative
 * to the pointer handed to MPI, and the stride of elements. */
typedef struct layout {
    const char *name;
    MPI_Datatype type;
    MPI_Aint int_at, double_at, extent, lb;
} layout_t;

static layout_t padded, swapped;
static int rank, nranks, failures;

static void fail(const char *what, const char *why)
{
    if (failures++ < 10) {
        fprintf(stderr, "test_coll_own_block: rank %d: %s: %s\n", rank, what, why);
    }
}

static MPI_Datatype pair_type(MPI_Aint int_at, MPI_Aint double_at, MPI_Aint lb, MPI_Aint extent)
{
    int lens[2] = {1, 1};
    MPI_Aint displs[2] = {int_at, double_at};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, raw, sized;
    MPI_Type_create_struct(2, lens, displs, types, &raw);
    MPI_Type_create_resized(raw, lb, extent, &sized);
    MPI_Type_free(&raw);
    MPI_Type_commit(&sized);
    return sized;
}

static void layouts_make(void)
{
    /* int at 0, double at 4 (packed 12 bytes), extent 20 from -8: 8 bytes
     * of gap before each element's data; the fuzzer's case. */
    padded = (layout_t){"padded", pair_type(0, 4, -8, 20), 0, 4, 20, -8};
    /* double at 0, int at 12, extent 16: a 4-byte gap inside. */
    swapped = (layout_t){"swapped", pair_type(12, 0, 0, 16), 12, 0, 16, 0};
}

/* A buffer of n elements of a layout inside sentinel zones. */
typedef struct buffer {
    char *mem, *origin;
    size_t bytes;
} buffer_t;

static bool buffer_make(buffer_t *b, const layout_t *lay, size_t n)
{
    b->bytes = (size_t)lay->extent * n + 2 * ZONE;
    b->mem = malloc(b->bytes);
    if (NULL == b->mem) {
        return false;
    }
    memset(b->mem, SENTINEL, b->bytes);
    b->origin = b->mem + ZONE - lay->lb;
    return true;
}

static int int_of(int owner, size_t block, size_t i, int start)
{
    return (int)(owner * 1000003 + (int)block * 7919 + (int)i * 3 + start * 500009);
}

static double double_of(int owner, size_t block, size_t i, int start)
{
    return (double)int_of(owner, block, i, start) + 0.25;
}

static void put(const buffer_t *b, const layout_t *lay, size_t at, int iv, double dv)
{
    char *e = b->origin + (MPI_Aint)at * lay->extent;
    memcpy(e + lay->int_at, &iv, sizeof(iv));
    memcpy(e + lay->double_at, &dv, sizeof(dv));
}

/* Elements [first, first + n) hold the values of owner's block (of this
 * start), bit for bit. */
static void check_block(const buffer_t *b, const layout_t *lay, size_t first, size_t n, int owner,
                        size_t block, int start, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        const char *e = b->origin + (MPI_Aint)(first + i) * lay->extent;
        int iv;
        double dv;
        memcpy(&iv, e + lay->int_at, sizeof(iv));
        memcpy(&dv, e + lay->double_at, sizeof(dv));
        const double want = double_of(owner, block, i, start);
        if (iv != int_of(owner, block, i, start) || memcmp(&dv, &want, sizeof(dv))) {
            char why[160];
            snprintf(why, sizeof(why), "block of rank %d, element %zu of %zu is wrong", owner, i,
                     n);
            fail(what, why);
            return;
        }
    }
}

/* Every byte of the buffer outside the data of its n elements is still
 * the sentinel. */
static void check_untouched(const buffer_t *b, const layout_t *lay, size_t n, const char *what)
{
    for (size_t k = 0; k < b->bytes; k++) {
        const MPI_Aint off = (MPI_Aint)k - ZONE + lay->lb; /* from the origin */
        bool data = false;
        if (off >= lay->lb && off < lay->lb + (MPI_Aint)n * lay->extent) {
            const MPI_Aint in = ((off - lay->lb) % lay->extent) + lay->lb;
            data = (in >= lay->int_at && in < lay->int_at + 4) ||
                   (in >= lay->double_at && in < lay->double_at + 8);
        }
        if (!data && SENTINEL != (unsigned char)b->mem[k]) {
            char why[120];
            snprintf(why, sizeof(why), "byte %td from the origin, outside the data, changed", off);
            fail(what, why);
            return;
        }
    }
}

static unsigned long long pvar(const char *name)
{
    return pvar_util_value_or_abort("test_coll_own_block", name);
}

enum form { BLOCKING, NONBLOCKING, PERSISTENT, NFORMS };
enum coll { GATHER, SCATTER, ALLGATHER, ALLTOALL, NCOLLS };
static const char *const coll_names[NCOLLS] = {"Gather", "Scatter", "Allgather", "Alltoall"};

/* Start or make one call of coll in form (persistent: MPI_<Coll>_init). */
static void issue(enum coll coll, enum form form, const void *sarg, MPI_Datatype stype, void *rarg,
                  MPI_Datatype rtype, int n, int root, MPI_Request *req)
{
    const MPI_Comm w = MPI_COMM_WORLD;
    switch (form) {
        case PERSISTENT:
            if (GATHER == coll) {
                PCOLL_INIT(Gather)(sarg, n, stype, rarg, n, rtype, root, w, MPI_INFO_NULL, req);
            } else if (SCATTER == coll) {
                PCOLL_INIT(Scatter)(sarg, n, stype, rarg, n, rtype, root, w, MPI_INFO_NULL, req);
            } else if (ALLGATHER == coll) {
                PCOLL_INIT(Allgather)(sarg, n, stype, rarg, n, rtype, w, MPI_INFO_NULL, req);
            } else {
                PCOLL_INIT(Alltoall)(sarg, n, stype, rarg, n, rtype, w, MPI_INFO_NULL, req);
            }
            break;
        case NONBLOCKING:
            if (GATHER == coll) {
                MPI_Igather(sarg, n, stype, rarg, n, rtype, root, w, req);
            } else if (SCATTER == coll) {
                MPI_Iscatter(sarg, n, stype, rarg, n, rtype, root, w, req);
            } else if (ALLGATHER == coll) {
                MPI_Iallgather(sarg, n, stype, rarg, n, rtype, w, req);
            } else {
                MPI_Ialltoall(sarg, n, stype, rarg, n, rtype, w, req);
            }
            break;
        default:
            if (GATHER == coll) {
                MPI_Gather(sarg, n, stype, rarg, n, rtype, root, w);
            } else if (SCATTER == coll) {
                MPI_Scatter(sarg, n, stype, rarg, n, rtype, root, w);
            } else if (ALLGATHER == coll) {
                MPI_Allgather(sarg, n, stype, rarg, n, rtype, w);
            } else {
                MPI_Alltoall(sarg, n, stype, rarg, n, rtype, w);
            }
            break;
    }
}

/* One call (all its starts) of coll; returns the copies this rank's
 * hand-back should have made.  in_place: the root passes MPI_IN_PLACE
 * (allgather: every rank). */
static unsigned long long one_call(enum coll coll, enum form form, const layout_t *slay,
                                   const layout_t *rlay, size_t n, int root, bool in_place)
{
    /* Who holds every block: gather's root, every rank of an allgather;
     * whose own block may be mended (the root, every rank). */
    const bool all = ALLGATHER == coll || ALLTOALL == coll;
    const bool collects = all || (GATHER == coll && rank == root);
    const bool own = all || rank == root;
    const size_t sblocks = ALLTOALL == coll  ? (size_t)nranks
                           : SCATTER == coll ? (rank == root ? (size_t)nranks : 0)
                                             : 1;
    const size_t rblocks = SCATTER == coll ? 1 : (collects ? (size_t)nranks : 0);
    buffer_t s = {0}, r = {0};
    if (!buffer_make(&s, slay, n * sblocks) || !buffer_make(&r, rlay, n * rblocks)) {
        fprintf(stderr, "test_coll_own_block: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char what[200];
    snprintf(what, sizeof(what), "MPI_%s%s%s of %zu x %s to %s, root %d%s",
             NONBLOCKING == form ? "I" : "",
             NONBLOCKING == form && all ? (ALLGATHER == coll ? "allgather" : "alltoall")
                                        : coll_names[coll],
             PERSISTENT == form ? "_init" : "", n, slay->name, rlay->name, root,
             in_place ? " (in place)" : "");
    /* In place: the own block lives in the big buffer. */
    const void *sarg = s.origin;
    void *rarg = r.origin;
    if (in_place && own) {
        if (SCATTER == coll) {
            rarg = MPI_IN_PLACE;
        } else {
            sarg = MPI_IN_PLACE;
        }
    }
    const int starts = PERSISTENT == form ? 2 : 1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (PERSISTENT == form) {
        issue(coll, form, sarg, slay->type, rarg, rlay->type, (int)n, root, &req);
    }
    for (int start = 0; start < starts; start++) {
        /* The input: every send block (block b of a scatter's root or an
         * alltoall for rank b); in place, the own block in the receive
         * (gather, allgather) or send (scatter) buffer, an alltoall's
         * every block in the receive buffer. */
        for (size_t b = 0; b < sblocks; b++) {
            for (size_t i = 0; i < n; i++) {
                const size_t block = SCATTER == coll || ALLTOALL == coll ? b : (size_t)rank;
                put(&s, slay, b * n + i, int_of(rank, block, i, start),
                    double_of(rank, block, i, start));
            }
        }
        if (in_place && ALLTOALL == coll) {
            for (size_t b = 0; b < (size_t)nranks; b++) {
                for (size_t i = 0; i < n; i++) {
                    put(&r, rlay, b * n + i, int_of(rank, b, i, start),
                        double_of(rank, b, i, start));
                }
            }
        } else if (in_place && own && SCATTER != coll) {
            for (size_t i = 0; i < n; i++) {
                put(&r, rlay, (size_t)rank * n + i, int_of(rank, (size_t)rank, i, start),
                    double_of(rank, (size_t)rank, i, start));
            }
        }
        if (PERSISTENT == form) {
            MPI_Start(&req);
        } else {
            issue(coll, form, sarg, slay->type, rarg, rlay->type, (int)n, root, &req);
        }
        if (MPI_REQUEST_NULL != req) {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        if (collects) {
            /* block q: rank q's own (gather, allgather), the one it sent
             * to this rank (alltoall) */
            for (int q = 0; q < nranks; q++) {
                const size_t block = ALLTOALL == coll ? (size_t)rank : (size_t)q;
                check_block(&r, rlay, (size_t)q * n, n, q, block, start, what);
            }
            check_untouched(&r, rlay, n * (size_t)nranks, what);
        } else if (SCATTER == coll && !(in_place && own)) {
            check_block(&r, rlay, 0, n, root, (size_t)rank, start, what);
            check_untouched(&r, rlay, n, what);
        }
    }
    if (PERSISTENT == form) {
        MPI_Request_free(&req);
    }
    free(s.mem);
    free(r.mem);
    /* At risk: its own block, not in place, two datatypes, over 64 KiB. */
    const bool at_risk = own && !in_place && slay != rlay && 12 * n > 64 * 1024;
    return at_risk ? (unsigned long long)starts : 0;
}

int main(int argc, char **argv)
{
    bool expect_copies = false;
    int only = -1;
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--expect-copies")) {
            expect_copies = true;
            continue;
        }
        if (0 == strcmp(argv[i], "--coll") && i + 1 < argc) {
            i++;
            for (int c = 0; c < NCOLLS; c++) {
                if (0 == strcasecmp(argv[i], coll_names[c])) {
                    only = c;
                }
            }
            if (only >= 0) {
                continue;
            }
        }
        fprintf(stderr, "usage: test_coll_own_block [--expect-copies] [--coll gather|scatter|"
                        "allgather|alltoall]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (expect_copies && PVAR_OK != pvar_util_init()) {
        fprintf(stderr, "test_coll_own_block: MPI_T performance variables unavailable\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    layouts_make();
    static const char *const counters[] = {
        "coll_bufpool_gather_calls",      "coll_bufpool_igather_calls",
        "coll_bufpool_gather_init_calls", "coll_bufpool_scatter_calls",
        "coll_bufpool_iscatter_calls",    "coll_bufpool_scatter_init_calls"};
    const size_t ncounters = sizeof(counters) / sizeof(*counters);
    unsigned long long served0[6] = {0}, copies0 = 0, copies = 0;
    if (expect_copies) {
        copies0 = pvar("coll_bufpool_own_block_copies");
        for (size_t c = 0; c < ncounters; c++) {
            served0[c] = pvar(counters[c]);
        }
    }
    /* 12 packed bytes an element: 12 KiB, 64 KiB + 8, 256 KiB + 8. */
    const size_t counts[] = {1000, 5462, 21846};
    const layout_t *pairs[][2] = {{&padded, &swapped}, {&swapped, &padded}, {&swapped, &swapped}};
    for (int coll = 0; coll < NCOLLS; coll++) {
        if (only >= 0 && coll != only) {
            continue;
        }
        for (int form = 0; form < NFORMS; form++) {
            for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
                /* allgather and alltoall have no root: once */
                const int roots = ALLGATHER == coll || ALLTOALL == coll ? 1 : nranks;
                for (int root = 0; root < roots; root++) {
                    for (size_t k = 0; k < sizeof(pairs) / sizeof(*pairs); k++) {
                        copies += one_call((enum coll)coll, (enum form)form, pairs[k][0],
                                           pairs[k][1], counts[c], root, false);
                    }
                    copies += one_call((enum coll)coll, (enum form)form, &padded, &swapped,
                                       counts[c], root, true);
                }
            }
        }
    }
    if (expect_copies) {
        const unsigned long long got = pvar("coll_bufpool_own_block_copies") - copies0;
        char msg[200];
        if (got != copies) {
            snprintf(msg, sizeof(msg), "grew by %llu, expected %llu", got, copies);
            fail("coll_bufpool_own_block_copies", msg);
        }
        for (size_t c = 0; c < ncounters; c++) {
            const unsigned long long served = pvar(counters[c]) - served0[c];
            if (0 != served) {
                snprintf(msg, sizeof(msg), "grew by %llu: the rules hand every call back", served);
                fail(counters[c], msg);
            }
        }
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_coll_own_block: %s: %d ranks, %d failures over all ranks\n",
               all ? "FAIL" : "PASS", nranks, all);
    }
    MPI_Type_free(&padded.type);
    MPI_Type_free(&swapped.type);
    if (expect_copies) {
        pvar_util_finalize();
    }
    MPI_Finalize();
    return all ? 1 : 0;
}
