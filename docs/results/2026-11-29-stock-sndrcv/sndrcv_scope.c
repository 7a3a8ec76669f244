/*
 * A stock Open MPI bug the differential fuzzer found (2026-11-29): a rank's
 * own block, copied locally from its send to its receive datatype, loses
 * the last element's double when the two layouts differ and a 64 KiB chunk
 * boundary of the packed stream falls inside an element (the local copy
 * helper, ompi_datatype_sndrcv, packs and unpacks 64 KiB at a time).  Send
 * type: {int at 0, double at 4}, resized to lower bound -8 and extent 20;
 * receive type: {int at 12, double at 0}, extent 16 (the same signature).
 *
 *   mpicc -O1 sndrcv_scope.c -o sndrcv_scope
 *   mpirun -np 3 --mca coll ^bufpool ./sndrcv_scope 5462    # 12 x 5462 = 64 KiB + 8
 *
 * prints WRONG for gather, scatter, allgather, alltoall and their
 * nonblocking forms on Open MPI 4.1.4, 5.0.10 and 6.0.x; 5461 elements
 * (under 64 KiB) print ok; MPI_Sendrecv to self is right (the PML's path).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static MPI_Datatype pair(MPI_Aint i_at, MPI_Aint d_at, MPI_Aint ext)
{
    int l[2] = {1, 1};
    MPI_Aint d[2] = {i_at, d_at};
    MPI_Datatype t[2] = {MPI_INT, MPI_DOUBLE}, s, r;
    MPI_Type_create_struct(2, l, d, t, &s);
    MPI_Type_create_resized(s, 0, ext, &r);
    MPI_Type_free(&s);
    MPI_Type_commit(&r);
    return r;
}
static void put(char *e, MPI_Aint io, MPI_Aint dof, int iv, double dv)
{
    memcpy(e + io, &iv, 4);
    memcpy(e + dof, &dv, 8);
}
static int ok(const char *e, MPI_Aint io, MPI_Aint dof, int iv, double dv)
{
    int a;
    double b;
    memcpy(&a, e + io, 4);
    memcpy(&b, e + dof, 8);
    return a == iv && b == dv;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const int n = argc > 1 ? atoi(argv[1]) : 5462;
    MPI_Datatype C = pair(0, 4, 12), A,
                 B = pair(12, 0, 16); /* A: resized(pairC, lb -8, extent 20); B: double 0 int 12 */
    MPI_Type_create_resized(C, -8, 20, &A);
    MPI_Type_commit(&A);
    const char *names[] = {"gather",  "scatter",    "allgather", "alltoall",
                           "igather", "iallgather", "ialltoall", "iscatter"};
    for (int c = 0; c < 8; c++) {
        size_t blocks = (c == 0 || c == 2 || c == 4 || c == 5) ? (size_t)p
                        : (c == 3 || c == 6)                   ? (size_t)p
                                                               : 1;
        size_t sblocks = (c == 1 || c == 3 || c == 6 || c == 7) ? (size_t)p : 1;
        char *sm = calloc(sblocks * n + 1, 20), *s = sm + 8, *r = calloc(blocks * n, 16);
        for (size_t b = 0; b < sblocks; b++)
            for (int i = 0; i < n; i++)
                put(s + (b * n + i) * 20, 0, 4, rank * 1000 + (int)b, i + 0.25);
        MPI_Request q = MPI_REQUEST_NULL;
        switch (c) {
            case 0:
                MPI_Gather(s, n, A, r, n, B, 0, MPI_COMM_WORLD);
                break;
            case 1:
                MPI_Scatter(s, n, A, r, n, B, 0, MPI_COMM_WORLD);
                break;
            case 2:
                MPI_Allgather(s, n, A, r, n, B, MPI_COMM_WORLD);
                break;
            case 3:
                MPI_Alltoall(s, n, A, r, n, B, MPI_COMM_WORLD);
                break;
            case 4:
                MPI_Igather(s, n, A, r, n, B, 0, MPI_COMM_WORLD, &q);
                break;
            case 5:
                MPI_Iallgather(s, n, A, r, n, B, MPI_COMM_WORLD, &q);
                break;
            case 6:
                MPI_Ialltoall(s, n, A, r, n, B, MPI_COMM_WORLD, &q);
                break;
            case 7:
                MPI_Iscatter(s, n, A, r, n, B, 0, MPI_COMM_WORLD, &q);
                break;
        }
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int bad = 0;
        int checks = (c == 0 || c == 4) ? (rank == 0) : 1;
        for (size_t b = 0; checks && b < blocks; b++)
            for (int i = 0; i < n; i++) {
                int src = (c == 1 || c == 7) ? 0 : (int)b;
                int blk = (c == 1 || c == 7) ? rank : (c == 3 || c == 6) ? rank : 0;
                if (!ok(r + (b * n + i) * 16, 12, 0, src * 1000 + blk, i + 0.25))
                    bad++;
            }
        int all = 0;
        MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%-11s n=%d: %s (%d bad elements over all ranks)\n", names[c], n,
                   all ? "WRONG" : "ok", all);
        free(sm);
        free(r);
    }
    MPI_Finalize();
    return 0;
}
