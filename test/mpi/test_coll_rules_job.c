/*
 * The rules end to end, in a job: for each case on the command line, one
 * collective call of a given size on MPI_COMM_WORLD or on a duplicate
 * carrying info keys, its result checked, and the MPI_T counters of
 * coll/bufpool proving who served it (bufpool, or the previous module it
 * handed the call to) exactly as the rules file, min_size and the info
 * keys of the job say.  test/mpi/coll_rules.sh writes the rules files and
 * runs the cases.
 *
 *   test_coll_rules_job [--info KEY=VALUE]... CASE...
 *
 * CASE is COLL:BYTES:WHO[:COMM] with COLL one of allreduce, bcast, reduce,
 * allgather, alltoall, scan; BYTES the message (per block for allgather and
 * alltoall; a multiple of 4); WHO served, previous (handed back through
 * bufpool's entry) or none (bufpool did not install the collective on that
 * communicator because the rules give all of it to the previous module:
 * neither counter moves); COMM world (default), info (the duplicate with
 * the --info keys) or dup (a plain duplicate made after that one: the same
 * shape as world, whose size maps it shares, and not the info one's).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvar_util.h"

static int rank, size, failures;

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "test_coll_rules_job: rank %d: FAIL: %s: %s\n", rank, what, detail);
    failures++;
}

/* Run one call of coll with n int32 elements (per block) and check it. */
static int run_checked(const char *coll, int n, MPI_Comm comm)
{
    const int p = size;
    int32_t *a = malloc(sizeof(int32_t) * (size_t)n * (size_t)p);
    int32_t *b = malloc(sizeof(int32_t) * (size_t)n * (size_t)p);
    int bad = 0;
    for (int i = 0; i < n * p; i++) {
        a[i] = rank * 1000003 + i;
        b[i] = -1;
    }
    if (0 == strcmp(coll, "allreduce")) {
        MPI_Allreduce(a, b, n, MPI_INT32_T, MPI_SUM, comm);
        for (int i = 0; i < n; i++) {
            int64_t want = 0;
            for (int r = 0; r < p; r++) {
                want += r * 1000003 + i;
            }
            bad += b[i] != (int32_t)want;
        }
    } else if (0 == strcmp(coll, "reduce")) {
        MPI_Reduce(a, b, n, MPI_INT32_T, MPI_SUM, 0, comm);
        for (int i = 0; 0 == rank && i < n; i++) {
            int64_t want = 0;
            for (int r = 0; r < p; r++) {
                want += r * 1000003 + i;
            }
            bad += b[i] != (int32_t)want;
        }
    } else if (0 == strcmp(coll, "bcast")) {
        MPI_Bcast(a, n, MPI_INT32_T, 0, comm);
        for (int i = 0; i < n; i++) {
            bad += a[i] != i;
        }
    } else if (0 == strcmp(coll, "allgather")) {
        MPI_Allgather(a, n, MPI_INT32_T, b, n, MPI_INT32_T, comm);
        for (int r = 0; r < p; r++) {
            for (int i = 0; i < n; i++) {
                bad += b[r * n + i] != r * 1000003 + i;
            }
        }
    } else if (0 == strcmp(coll, "alltoall")) {
        MPI_Alltoall(a, n, MPI_INT32_T, b, n, MPI_INT32_T, comm);
        for (int r = 0; r < p; r++) {
            for (int i = 0; i < n; i++) {
                bad += b[r * n + i] != r * 1000003 + rank * n + i;
            }
        }
    } else if (0 == strcmp(coll, "scan")) {
        MPI_Scan(a, b, n, MPI_INT32_T, MPI_SUM, comm);
        for (int i = 0; i < n; i++) {
            int64_t want = 0;
            for (int r = 0; r <= rank; r++) {
                want += r * 1000003 + i;
            }
            bad += b[i] != (int32_t)want;
        }
    } else {
        fail(coll, "unknown collective in a case");
        bad = 1;
    }
    free(a);
    free(b);
    return bad;
}

static int read_counter(const char *coll, const char *which, unsigned long long *v)
{
    char name[96];
    snprintf(name, sizeof(name), "coll_bufpool_%s_%s", coll, which);
    enum pvar_status st = pvar_util_read(name, v);
    if (PVAR_OK != st) {
        fail(name, pvar_util_status_string(st));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (PVAR_OK != pvar_util_init()) {
        fail("MPI_T", "cannot read performance variables");
    }
    MPI_Info info;
    MPI_Info_create(&info);
    int ncases = 0;
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--info") && i + 1 < argc) {
            char kv[128];
            snprintf(kv, sizeof(kv), "%s", argv[++i]);
            char *eq = strchr(kv, '=');
            if (NULL == eq) {
                fail("--info", "wants KEY=VALUE");
                continue;
            }
            *eq = '\0';
            MPI_Info_set(info, kv, eq + 1);
        }
    }
    MPI_Comm with_info, dup;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &with_info);
    MPI_Info_free(&info);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);

    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--info")) {
            i++;
            continue;
        }
        char coll[32], who[16], comm_name[16] = "world";
        unsigned long bytes;
        if (sscanf(argv[i], "%31[a-z_]:%lu:%15[a-z]:%15[a-z]", coll, &bytes, who, comm_name) < 3 ||
            bytes % 4 != 0 ||
            (0 != strcmp(who, "served") && 0 != strcmp(who, "previous") &&
             0 != strcmp(who, "none"))) {
            fail(argv[i],
                 "not COLL:BYTES:served|previous|none[:world|info|dup] with BYTES a multiple of "
                 "4");
            continue;
        }
        MPI_Comm comm = 0 == strcmp(comm_name, "info")  ? with_info
                        : 0 == strcmp(comm_name, "dup") ? dup
                                                        : MPI_COMM_WORLD;
        unsigned long long calls0, fb0, calls1, fb1;
        if (read_counter(coll, "calls", &calls0) || read_counter(coll, "fallbacks", &fb0)) {
            continue;
        }
        if (0 != run_checked(coll, (int)(bytes / 4), comm)) {
            fail(argv[i], "wrong result");
        }
        if (read_counter(coll, "calls", &calls1) || read_counter(coll, "fallbacks", &fb1)) {
            continue;
        }
        const int served = 0 == strcmp(who, "served"), previous = 0 == strcmp(who, "previous");
        if (calls1 - calls0 != (unsigned long long)served ||
            fb1 - fb0 != (unsigned long long)previous) {
            char got[96];
            snprintf(got, sizeof(got), "served %llu, handed back %llu (expected %s)",
                     calls1 - calls0, fb1 - fb0, who);
            fail(argv[i], got);
        }
        ncases++;
    }
    MPI_Comm_free(&with_info);
    MPI_Comm_free(&dup);
    pvar_util_finalize();
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_coll_rules_job: %d cases on %d ranks, %d failures\n", ncases, size, all);
    }
    MPI_Finalize();
    return 0 == all ? 0 : 1;
}
