/*
 * MPI_Ireduce and MPI_Reduce_init of a user-defined commutative operation,
 * with datatypes whose data does not start at their origin (a true lower
 * bound of +8 and of -8 bytes) and with a plain one, the root's input in
 * place or not.
 *
 * Stock libnbc receives into its temporary buffers without the datatype's
 * true lower bound (Rabenseifner's algorithm on 3 or more ranks; on 2 with
 * the root's input in place): it writes past (or before) such a buffer and
 * can return wrong elements
 * (docs/reliability.md).  coll/bufpool serves every such call instead
 * (coll_bufpool_resolve.c, guard_map), so this program, run with a rules
 * file that hands every reduce back (coll_reduce_guard.sh), checks:
 *   - every element of the root's result, bit for bit, against the sum
 *     computed here, on every root, in both forms (a persistent request
 *     started twice, the input changed between the starts);
 *   - that no byte outside the datatype's data changed: the gaps inside
 *     the buffers and guard zones around them, on every rank;
 *   - with --expect-guard[=FROM], that bufpool served every one of those
 *     calls (coll_bufpool_ireduce_calls and _reduce_init_calls grew by
 *     the number made, and coll_bufpool_guarded_calls: the rules hand
 *     them back), on 2 ranks only those of FROM bytes of data or more
 *     ("never": none; default 0), and handed back the others and every
 *     MPI_Ireduce of the built-in MPI_SUM on MPI_UINT32_T
 *     (coll_bufpool_ireduce_fallbacks and _reduce_init_fallbacks grew by
 *     those), which the guard leaves to libnbc; with "never" that bufpool
 *     did not take the calls at all (every counter unchanged: it does not
 *     install a collective whose every call it would hand back);
 *   - with --never-handed-back[=FROM], under any rules, that bufpool
 *     handed none of those calls (on 2 ranks: of FROM bytes of data or
 *     more) to the module below, the first calls of a node row included
 *     (coll_bufpool_node_warmup_calls): their fallback counters do not
 *     move across any one of them.
 *
 * With --blocking first, the same checks of blocking MPI_Reduce, for runs
 * across hosts, where han's reduce is below bufpool (Open MPI 5.0 and
 * 6.0): --expect-guard (no FROM) that bufpool served every call of the
 * user operation as guarded (coll_bufpool_reduce_calls and
 * coll_bufpool_guarded_calls grew by the number made) and handed back
 * none (coll_bufpool_reduce_fallbacks unchanged).
 * With --allreduce first, the same for blocking MPI_Allreduce of the user
 * operation, every rank's result checked, in place or not: tuned's ring
 * and segmented ring allreduce make the same mistake, so bufpool serves
 * the calls of a user-defined commutative operation in the bands where
 * tuned's fixed decision takes them (tuned_takes_ring, below), and hands
 * back the others and MPI_SUM's in those bands (--expect-guard, no FROM);
 * --never-handed-back: none of the guarded ones reached the module below.
 * With =all (--allreduce --expect-guard=all, --never-handed-back=all):
 * every call of the user operation is guarded, for runs where tuned may
 * take a ring at any size (its algorithm forced, or a tuned rules file).
 *
 * --mpit-set=NAME=INT before everything else: after MPI_Init, write the
 * integer control variable NAME through MPI_T, then run every collective
 * on a duplicate of MPI_COMM_WORLD made after the write.  tuned reads its
 * forced algorithms again for each new communicator, and so must the
 * guards (coll_tuned_allreduce_algorithm=4 with
 * coll_tuned_use_dynamic_rules on: --allreduce --expect-guard=all).
 */
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcoll.h"
#include "pvar_util.h"

#define GUARD_BYTES 64
#define SENTINEL    0xA5

/* Where the collectives run: MPI_COMM_WORLD, or its duplicate made after
 * --mpit-set's write. */
static MPI_Comm comm = MPI_COMM_WORLD;

/* The datatypes: where element i's uint32 fields lie relative to the
 * buffer's origin. */
typedef struct layout {
    const char *name;
    MPI_Datatype type;
    MPI_Aint extent;
    int fields;
    MPI_Aint field_offset[2];
} layout_t;

static layout_t layouts[3];
static int nlayouts;

static void layouts_make(void)
{
    /* Two fields at 8 and 12 of a 16-byte element: true lower bound +8. */
    int blocklens[2] = {1, 1};
    MPI_Aint displs[2] = {8, 12};
    MPI_Datatype types[2] = {MPI_UINT32_T, MPI_UINT32_T}, tmp;
    MPI_Type_create_struct(2, blocklens, displs, types, &tmp);
    MPI_Type_create_resized(tmp, 0, 16, &layouts[0].type);
    MPI_Type_free(&tmp);
    layouts[0] = (layout_t){"offset+8", layouts[0].type, 16, 2, {8, 12}};
    /* One field 8 bytes before each 16-byte element: true lower bound -8. */
    MPI_Aint before = -8;
    MPI_Type_create_struct(1, blocklens, &before, types, &tmp);
    MPI_Type_create_resized(tmp, -8, 16, &layouts[1].type);
    MPI_Type_free(&tmp);
    layouts[1] = (layout_t){"offset-8", layouts[1].type, 16, 1, {-8, 0}};
    layouts[2] = (layout_t){"uint32", MPI_UINT32_T, 4, 1, {0, 0}};
    for (int l = 0; l < 2; l++) {
        MPI_Type_commit(&layouts[l].type);
    }
    nlayouts = 3;
}

static const layout_t *layout_of(MPI_Datatype type)
{
    for (int l = 0; l < nlayouts; l++) {
        if (layouts[l].type == type) {
            return &layouts[l];
        }
    }
    return NULL;
}

/* The user operation: wrapping uint32 sums of the fields, where the
 * datatype puts them. */
static void field_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const layout_t *l = layout_of(*type);
    if (NULL == l) {
        fprintf(stderr, "test_coll_reduce_guard: the operation got an unknown datatype\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
        return;
    }
    for (int i = 0; i < *len; i++) {
        for (int f = 0; f < l->fields; f++) {
            const MPI_Aint at = (MPI_Aint)i * l->extent + l->field_offset[f];
            uint32_t a, b;
            memcpy(&a, (char *)in + at, sizeof(a));
            memcpy(&b, (char *)inout + at, sizeof(b));
            b += a;
            memcpy((char *)inout + at, &b, sizeof(b));
        }
    }
}

static uint32_t value_of(int rank, size_t i, int field, int start)
{
    return (uint32_t)rank * 2654435761u + (uint32_t)i * 40503u + (uint32_t)field * 7u +
           (uint32_t)start * 1000003u;
}

/* A buffer of count elements with guard zones around it; origin is where
 * the datatype's element 0 starts (its data may lie before it). */
typedef struct buffer {
    unsigned char *mem;
    size_t bytes;
    char *origin;
} buffer_t;

static bool buffer_make(buffer_t *b, const layout_t *l, size_t count)
{
    const size_t span = count * (size_t)l->extent + 16; /* -8 ... extent */
    b->bytes = span + 2 * GUARD_BYTES;
    b->mem = malloc(b->bytes);
    if (NULL == b->mem) {
        return false;
    }
    memset(b->mem, SENTINEL, b->bytes);
    b->origin = (char *)b->mem + GUARD_BYTES + 8;
    return true;
}

static void fill(buffer_t *b, const layout_t *l, size_t count, int rank, int start)
{
    for (size_t i = 0; i < count; i++) {
        for (int f = 0; f < l->fields; f++) {
            const uint32_t v = value_of(rank, i, f, start);
            memcpy(b->origin + (MPI_Aint)i * l->extent + l->field_offset[f], &v, sizeof(v));
        }
    }
}

/* Failures of one check, reported up to a few per rank. */
static long failures, reports;

static void fail(const char *what)
{
    failures++;
    if (reports++ < 10) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "test_coll_reduce_guard: rank %d: %s\n", rank, what);
    }
}

/* Every byte that is not a field of elements [0, count) still holds the
 * sentinel; with fields_too, the fields as well (a buffer nobody may
 * write). */
static void check_untouched(const buffer_t *b, const layout_t *l, size_t count, bool fields_too,
                            const char *what)
{
    unsigned char *data = calloc(b->bytes, 1);
    if (NULL == data) {
        fprintf(stderr, "test_coll_reduce_guard: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
        return;
    }
    const ptrdiff_t origin = b->origin - (char *)b->mem;
    for (size_t i = 0; !fields_too && i < count; i++) {
        for (int f = 0; f < l->fields; f++) {
            memset(data + origin + (MPI_Aint)i * l->extent + l->field_offset[f], 1, 4);
        }
    }
    for (size_t k = 0; k < b->bytes; k++) {
        if (!data[k] && SENTINEL != b->mem[k]) {
            char msg[320];
            snprintf(msg, sizeof(msg), "%s: byte %ld from the origin (outside the data) changed",
                     what, (long)((ptrdiff_t)k - origin));
            fail(msg);
            break;
        }
    }
    free(data);
}

static void check_result(const buffer_t *b, const layout_t *l, size_t count, int p, int start,
                         const char *what)
{
    for (size_t i = 0; i < count; i++) {
        for (int f = 0; f < l->fields; f++) {
            uint32_t want = 0, got;
            for (int r = 0; r < p; r++) {
                want += value_of(r, i, f, start);
            }
            memcpy(&got, b->origin + (MPI_Aint)i * l->extent + l->field_offset[f], sizeof(got));
            if (got != want) {
                char msg[320];
                snprintf(msg, sizeof(msg), "%s: element %zu field %d is %u, expected %u", what, i,
                         f, got, want);
                fail(msg);
                return;
            }
        }
    }
}

static unsigned long long pvar(const char *name)
{
    return pvar_util_value_or_abort("test_coll_reduce_guard", name);
}

/* The calls of both forms bufpool handed to the module below so far. */
static unsigned long long handed_back(void)
{
    return pvar("coll_bufpool_ireduce_fallbacks") + pvar("coll_bufpool_reduce_init_fallbacks");
}

/* The n sums of value_of(rank, i, 0, 0) over the p ranks in out, or a
 * failure what. */
static void check_builtin_sum(const uint32_t *out, int n, int p, const char *what)
{
    for (int i = 0; i < n; i++) {
        uint32_t want = 0;
        for (int q = 0; q < p; q++) {
            want += value_of(q, (size_t)i, 0, 0);
        }
        if (out[i] != want) {
            fail(what);
            return;
        }
    }
}

/* tuned's fixed decision for a commutative operation
 * (ompi_coll_tuned_allreduce_intra_dec_fixed, the same in 4.1, 5.0.10 and
 * 6.0.x), as tuned writes it: whether it takes its ring (4) or segmented
 * ring (5) for bytes of data on p ranks. */
static bool tuned_takes_ring(int p, unsigned long long bytes)
{
    if (p < 4) {
        return bytes < 8 || (bytes >= 4096 && bytes < 8192) || (bytes >= 16384 && bytes < 262144);
    }
    if (p < 8) {
        return bytes < 16;
    }
    if (p < 16) {
        return false;
    }
    if (p < 32) {
        return bytes < 64;
    }
    if (p < 64) {
        return bytes < 128;
    }
    if (p < 2048) {
        return false;
    }
    return bytes >= 2048 && bytes < (p < 4096 ? 4096 : 16384);
}

/* The calls of the blocking allreduce bufpool handed to the module below. */
static unsigned long long allreduce_handed_back(void)
{
    return pvar("coll_bufpool_allreduce_fallbacks");
}

/* --allreduce: every layout and count, in place or not, every rank's
 * result and every byte around it checked; the counts as main's. */
static void allreduce_cases(int rank, int p, MPI_Op op, bool never_handed_back, bool guard_all,
                            unsigned long long *served, unsigned long long *handed)
{
    /* Around each band's edges at 2 and 3 ranks (signatures of 8 and 4
     * bytes): 4800, 24000, 40000 and 6000, 20000, 160000 bytes inside;
     * fewer elements than ranks, and 1 to 3 elements for the bands of 4
     * to 7 ranks. */
    const size_t counts[] = {1, 2, 3, 600, 1500, 3000, 5000, 40000, 70000};
    for (int l = 0; l < nlayouts; l++) {
        const layout_t *lay = &layouts[l];
        int type_size;
        MPI_Type_size(lay->type, &type_size);
        for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
            const size_t count = counts[c];
            for (int in_place = 0; in_place < 2; in_place++) {
                buffer_t s, r;
                if (!buffer_make(&s, lay, count) || !buffer_make(&r, lay, count)) {
                    fprintf(stderr, "test_coll_reduce_guard: out of memory\n");
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
                char what[160];
                snprintf(what, sizeof(what), "MPI_Allreduce of %zu x %s%s", count, lay->name,
                         in_place ? " in place" : "");
                fill(in_place ? &r : &s, lay, count, rank, 0);
                const bool guarded =
                    guard_all ||
                    tuned_takes_ring(p, (unsigned long long)count * (unsigned long long)type_size);
                const unsigned long long back_before =
                    never_handed_back ? allreduce_handed_back() : 0;
                MPI_Allreduce(in_place ? MPI_IN_PLACE : s.origin, r.origin, (int)count, lay->type,
                              op, comm);
                check_untouched(&s, lay, count, in_place, what);
                check_result(&r, lay, count, p, 0, what);
                check_untouched(&r, lay, count, false, what);
                if (never_handed_back && guarded && allreduce_handed_back() != back_before) {
                    char msg[240];
                    snprintf(msg, sizeof(msg), "%s: handed back to the module below", what);
                    fail(msg);
                }
                *(guarded ? served : handed) += 1;
                free(s.mem);
                free(r.mem);
            }
        }
    }
    /* The built-in operation in a band: the module below's, whatever the
     * bytes. */
    uint32_t in[1500], out[1500];
    for (int i = 0; i < 1500; i++) {
        in[i] = value_of(rank, (size_t)i, 0, 0);
    }
    MPI_Allreduce(in, out, 1500, MPI_UINT32_T, MPI_SUM, comm);
    check_builtin_sum(out, 1500, p, "MPI_Allreduce of MPI_SUM: a wrong element");
    *handed += 1;
}

/* The end of every run: the failures of all ranks summed, a line from
 * rank 0, the objects freed.  The exit status. */
static int finish(int rank, int p, MPI_Op *op, bool pvars, unsigned long long served,
                  unsigned long long unguarded)
{
    if (pvars) {
        pvar_util_finalize();
    }
    long all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_coll_reduce_guard: %d ranks, %llu calls of the user operation guarded, "
               "%llu not: %s\n",
               p, served, unguarded, 0 == all ? "PASS" : "FAIL");
    }
    MPI_Op_free(op);
    if (MPI_COMM_WORLD != comm) {
        MPI_Comm_free(&comm);
    }
    for (int l = 0; l < 2; l++) {
        MPI_Type_free(&layouts[l].type);
    }
    MPI_Finalize();
    return 0 == all ? 0 : 1;
}

/* A counter that must have grown by want, or a failure naming why. */
static void expect_growth(const char *name, unsigned long long grew, unsigned long long want,
                          const char *why)
{
    if (grew != want) {
        char msg[320];
        snprintf(msg, sizeof(msg), "%s grew by %llu, expected %llu (%s)", name, grew, want, why);
        fail(msg);
    }
}

/* --mpit-set=NAME=INT: the control variable NAME written through MPI_T
 * (a whole-job setting: every rank writes it alike), then comm made anew.
 * Exits the job where Open MPI refuses the write. */
static void mpit_set(int rank, const char *setting)
{
    char name[128];
    const char *eq = strchr(setting, '=');
    char *end;
    const long value = NULL == eq ? 0 : strtol(eq + 1, &end, 10);
    if (NULL == eq || (size_t)(eq - setting) >= sizeof(name) || '\0' == eq[1] || '\0' != *end) {
        if (0 == rank) {
            fprintf(stderr, "test_coll_reduce_guard: --mpit-set=NAME=INT, not %s\n", setting);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memcpy(name, setting, (size_t)(eq - setting));
    name[eq - setting] = '\0';
    int provided, index, count, rc;
    MPI_T_cvar_handle handle;
    const int v = (int)value;
    if (MPI_SUCCESS != (rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) ||
        MPI_SUCCESS != (rc = MPI_T_cvar_get_index(name, &index)) ||
        MPI_SUCCESS != (rc = MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) ||
        MPI_SUCCESS != (rc = MPI_T_cvar_write(handle, &v))) {
        fprintf(stderr, "test_coll_reduce_guard: rank %d: MPI_T could not write %s (error %d)\n",
                rank, name, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_T_cvar_handle_free(&handle);
    MPI_T_finalize();
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc > 1 && 0 == strncmp(argv[1], "--mpit-set=", 11)) {
        mpit_set(rank, argv[1] + 11);
        argc--;
        argv++;
    }
    const bool allreduce = argc > 1 && 0 == strcmp(argv[1], "--allreduce");
    const bool blocking = argc > 1 && 0 == strcmp(argv[1], "--blocking");
    if (allreduce || blocking) {
        argc--;
        argv++;
    }
    /* --expect-guard[=FROM] or --never-handed-back[=FROM]: from how many
     * bytes of data the guard serves on 2 ranks. */
    const char *arg = argc > 1 ? argv[1] : "";
    const char *value = NULL;
    bool expect_guard = false, never_handed_back = false;
    if (0 == strncmp(arg, "--expect-guard", 14) && ('\0' == arg[14] || '=' == arg[14])) {
        expect_guard = true;
        value = arg + 14;
    } else if (0 == strncmp(arg, "--never-handed-back", 19) &&
               ('\0' == arg[19] || '=' == arg[19])) {
        never_handed_back = true;
        value = arg + 19;
    }
    unsigned long long guard_from = 0;
    const bool guard_all = allreduce && NULL != value && 0 == strcmp(value, "=all");
    bool usage = argc > 2 || (argc > 1 && NULL == value) ||
                 (allreduce && NULL != value && '\0' != value[0] && !guard_all) ||
                 (blocking && (never_handed_back || (NULL != value && '\0' != value[0])));
    if (NULL != value && '=' == value[0] && !guard_all) {
        char *end;
        guard_from = 0 == strcmp(value + 1, "never") ? ULLONG_MAX : strtoull(value + 1, &end, 10);
        usage |= ULLONG_MAX != guard_from && ('\0' == value[1] || '\0' != *end);
    }
    if (usage) {
        if (0 == rank) {
            fprintf(stderr, "usage: test_coll_reduce_guard [--expect-guard[=BYTES|never] | "
                            "--never-handed-back[=BYTES]]\n"
                            "       test_coll_reduce_guard --allreduce [--expect-guard[=all] | "
                            "--never-handed-back[=all]]\n"
                            "       test_coll_reduce_guard --blocking [--expect-guard]\n"
                            "       (each may start with --mpit-set=NAME=INT)\n");
        }
        MPI_Finalize();
        return 2;
    }
    if (p > 2) {
        guard_from = 0;
    }
    if ((expect_guard || never_handed_back) && PVAR_OK != pvar_util_init()) {
        fprintf(stderr, "test_coll_reduce_guard: MPI_T performance variables unavailable\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    layouts_make();
    MPI_Op op;
    MPI_Op_create(field_sum, 1, &op);
    if (allreduce) {
        const unsigned long long calls0 = expect_guard ? pvar("coll_bufpool_allreduce_calls") : 0;
        const unsigned long long back0 = expect_guard ? allreduce_handed_back() : 0;
        const unsigned long long guarded0 = expect_guard ? pvar("coll_bufpool_guarded_calls") : 0;
        unsigned long long served = 0, handed = 0;
        allreduce_cases(rank, p, op, never_handed_back, guard_all, &served, &handed);
        if (expect_guard) {
            expect_growth(
                "coll_bufpool_guarded_calls", pvar("coll_bufpool_guarded_calls") - guarded0, served,
                guard_all ? "every call of the user operation (tuned's ring forced, or han below)"
                          : "the calls of the user operation in tuned's ring bands");
            expect_growth("coll_bufpool_allreduce_calls",
                          pvar("coll_bufpool_allreduce_calls") - calls0, served,
                          "the rules hand every call back: only the guarded ones are served");
            expect_growth("coll_bufpool_allreduce_fallbacks", allreduce_handed_back() - back0,
                          handed, "MPI_SUM, and the user operation outside the bands");
        }
        return finish(rank, p, &op, expect_guard || never_handed_back, served, handed - 1);
    }

    /* Element counts: below and above libnbc's power of two, each band of
     * the size maps (up to 4 KiB, to 512 KiB, above) for the 8-byte and
     * 4-byte signatures, and each side of libnbc's 2-rank chain (64 KiB of
     * data: 8191 and 8192 elements of 8 bytes). */
    const size_t counts[] = {(size_t)p, 1000, 5000, 8191, 8192, 40000, 100000};
    unsigned long long served = 0, handed = 0;
    const unsigned long long calls0 =
        expect_guard ? pvar(blocking ? "coll_bufpool_reduce_calls" : "coll_bufpool_ireduce_calls")
                     : 0;
    const unsigned long long blocking_back0 =
        expect_guard && blocking ? pvar("coll_bufpool_reduce_fallbacks") : 0;
    const unsigned long long inits0 = expect_guard ? pvar("coll_bufpool_reduce_init_calls") : 0;
    const unsigned long long back0 = expect_guard ? pvar("coll_bufpool_ireduce_fallbacks") : 0;
    const unsigned long long init_back0 =
        expect_guard ? pvar("coll_bufpool_reduce_init_fallbacks") : 0;
    unsigned long long handed_inits = 0;
    const unsigned long long guarded0 = expect_guard ? pvar("coll_bufpool_guarded_calls") : 0;
    for (int l = 0; l < nlayouts; l++) {
        const layout_t *lay = &layouts[l];
        for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
            const size_t count = counts[c];
            for (int root = 0; root < p; root++) {
                if (count >= 40000 && root != 0 && root != p - 1) {
                    continue;
                }
                for (int form = 0; form < 4; form++) {
                    /* Nonblocking or persistent, the root's input in
                     * place or not; --blocking: MPI_Reduce instead. */
                    const bool persistent = form & 1, in_place = form & 2;
                    if (blocking && persistent) {
                        continue;
                    }
                    const bool root_in_place = in_place && rank == root;
                    buffer_t s, r;
                    if (!buffer_make(&s, lay, count) || !buffer_make(&r, lay, count)) {
                        fprintf(stderr, "test_coll_reduce_guard: out of memory\n");
                        MPI_Abort(MPI_COMM_WORLD, 2);
                    }
                    char what[160];
                    snprintf(what, sizeof(what), "%s %s of %zu x %s, root %d%s",
                             persistent ? "MPI_Reduce_init"
                             : blocking ? "MPI_Reduce"
                                        : "MPI_Ireduce",
                             "user sum", count, lay->name, root, in_place ? " in place" : "");
                    void *sbuf = root_in_place ? MPI_IN_PLACE : s.origin;
                    MPI_Request req;
                    const int starts = persistent ? 2 : 1;
                    const unsigned long long back_before = never_handed_back ? handed_back() : 0;
                    if (persistent) {
                        PCOLL_INIT(Reduce)
                        (sbuf, r.origin, (int)count, lay->type, op, root, comm, MPI_INFO_NULL,
                         &req);
                    }
                    for (int start = 0; start < starts; start++) {
                        fill(root_in_place ? &r : &s, lay, count, rank, start);
                        if (persistent) {
                            MPI_Start(&req);
                        } else if (blocking) {
                            MPI_Reduce(sbuf, r.origin, (int)count, lay->type, op, root, comm);
                        } else {
                            MPI_Ireduce(sbuf, r.origin, (int)count, lay->type, op, root, comm,
                                        &req);
                        }
                        if (!blocking) {
                            MPI_Wait(&req, MPI_STATUS_IGNORE);
                        }
                        /* In place the send buffer is nobody's to write. */
                        check_untouched(&s, lay, count, root_in_place, what);
                        if (rank == root) {
                            check_result(&r, lay, count, p, start, what);
                            check_untouched(&r, lay, count, false, what);
                        } else {
                            check_untouched(&r, lay, count, true, what);
                        }
                    }
                    if (persistent) {
                        MPI_Request_free(&req);
                    }
                    /* Bytes of data: what every rank's decision sees. */
                    int type_size;
                    MPI_Type_size(lay->type, &type_size);
                    const bool guarded =
                        (unsigned long long)count * (unsigned long long)type_size >= guard_from;
                    if (never_handed_back && guarded && handed_back() != back_before) {
                        char msg[240];
                        snprintf(msg, sizeof(msg), "%s: handed back to the module below", what);
                        fail(msg);
                    }
                    if (guarded) {
                        served++;
                    } else if (persistent) {
                        handed_inits++;
                    } else {
                        handed++;
                    }
                    free(s.mem);
                    free(r.mem);
                }
            }
        }
    }
    /* The built-in operation: libnbc's, whatever the rules say of it. */
    for (int root = 0; root < p; root++) {
        uint32_t in[1000], out[1000];
        for (int i = 0; i < 1000; i++) {
            in[i] = value_of(rank, (size_t)i, 0, 0);
        }
        MPI_Request req;
        MPI_Ireduce(in, out, 1000, MPI_UINT32_T, MPI_SUM, root, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == root) {
            check_builtin_sum(out, 1000, p, "MPI_Ireduce of MPI_SUM: a wrong element");
        }
        handed++;
    }
    const unsigned long long unguarded = handed_inits + handed - (unsigned long long)p;
    if (expect_guard && blocking) {
        expect_growth("coll_bufpool_guarded_calls", pvar("coll_bufpool_guarded_calls") - guarded0,
                      served, "every MPI_Reduce of the user operation (han below bufpool)");
        expect_growth("coll_bufpool_reduce_calls", pvar("coll_bufpool_reduce_calls") - calls0,
                      served, "the rules hand every call back: only the guarded ones are served");
        expect_growth("coll_bufpool_reduce_fallbacks",
                      pvar("coll_bufpool_reduce_fallbacks") - blocking_back0, 0,
                      "no MPI_Reduce of the user operation goes to han");
    } else if (expect_guard) {
        const unsigned long long calls = pvar("coll_bufpool_ireduce_calls") - calls0;
        const unsigned long long inits = pvar("coll_bufpool_reduce_init_calls") - inits0;
        const unsigned long long back = pvar("coll_bufpool_ireduce_fallbacks") - back0;
        const unsigned long long init_back =
            pvar("coll_bufpool_reduce_init_fallbacks") - init_back0;
        expect_growth("coll_bufpool_guarded_calls", pvar("coll_bufpool_guarded_calls") - guarded0,
                      served,
                      "the calls of the user operation it guards, which the rules hand back");
        char msg[200];
        if (calls + inits != served) {
            snprintf(msg, sizeof(msg),
                     "bufpool served %llu MPI_Ireduce and %llu MPI_Reduce_init calls of the user "
                     "operation, expected %llu in all",
                     calls, inits, served);
            fail(msg);
        }
        if (ULLONG_MAX == guard_from) {
            /* Nothing to guard: every call of both forms goes to the
             * previous module, so bufpool does not take them at all (its
             * entries are not installed, bufpool_module_hands_back_all). */
            handed = handed_inits = 0;
        }
        if (back != handed || init_back != handed_inits) {
            snprintf(msg, sizeof(msg),
                     "bufpool handed back %llu MPI_Ireduce and %llu MPI_Reduce_init calls, "
                     "expected %llu and %llu (MPI_SUM, and the user operation below the guard)",
                     back, init_back, handed, handed_inits);
            fail(msg);
        }
    }
    return finish(rank, p, &op, expect_guard || never_handed_back, served, unguarded);
}
