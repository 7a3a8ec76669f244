/*
 * The per-collective table of coll_latency: how each collective is called,
 * how OSU's message size maps to its counts and buffers, the data each rank
 * sends and the independent check of what arrives, and the bytes a
 * bandwidth-optimal algorithm must move (the memcpy floor).
 */
#include "bufpool_config.h"

#include "coll_latency.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Data patterns and their independent references                           */

/* Positions get a hashed value so that a block landing at the wrong offset
 * (a multiple of any short period) is still caught. */
static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Bytes 4i..4i+3 of a pattern come from one hash of i (checks of 256 MiB
 * buffers stay cheap), offset by sender and destination so that every
 * block differs. */
static uint32_t pattern_word(size_t i, unsigned seed)
{
    return mix32((uint32_t)i ^ (seed * 0x9e3779b9U));
}

static uint8_t block_offset(int src, int dst)
{
    return (uint8_t)(31U * (unsigned)src + 7U * (unsigned)dst);
}

/* Element j contributed by rank r to a reduction: r + 1 plus 0..127, small
 * integers, so float sums of up to thousands of ranks stay exact. */
static unsigned float_offset(size_t j, unsigned seed)
{
    return pattern_word(j, seed) >> 25;
}

#define SENTINEL_BYTE 0xA5 /* as a float 0xA5A5A5A5 is negative: never a valid sum */

/* ------------------------------------------------------------------------ */
/* Collectives                                                               */

static int count_bytes(size_t size, int nprocs)
{
    (void)nprocs;
    return size > INT_MAX ? 0 : (int)size;
}

static int count_floats(size_t size, int nprocs)
{
    (void)nprocs;
    size_t n = size / sizeof(float);
    return n > INT_MAX ? 0 : (int)n;
}

static int count_float_blocks(size_t size, int nprocs)
{
    return count_floats(size, nprocs) / nprocs;
}

static size_t bytes_one(size_t size, int nprocs, int rank)
{
    (void)nprocs;
    (void)rank;
    return size;
}

static size_t bytes_all(size_t size, int nprocs, int rank)
{
    (void)rank;
    return size * (size_t)nprocs;
}

static size_t bytes_all_at_root(size_t size, int nprocs, int rank)
{
    return 0 == rank ? size * (size_t)nprocs : 1;
}

static size_t bytes_none(size_t size, int nprocs, int rank)
{
    (void)size;
    (void)nprocs;
    (void)rank;
    return 1;
}

static void fill_sentinel(char *buf, size_t bytes)
{
    memset(buf, SENTINEL_BYTE, bytes);
}

static void fill_bytes(char *buf, size_t n, int src, int dst, unsigned seed)
{
    const uint8_t offset = block_offset(src, dst);
    uint32_t word = 0;
    for (size_t j = 0; j < n; j++) {
        if (0 == (j & 3)) {
            word = pattern_word(j >> 2, seed);
        }
        buf[j] = (char)(uint8_t)((word >> (8 * (j & 3))) + offset);
    }
}

static long count_wrong_bytes(const char *buf, size_t n, int src, int dst, unsigned seed)
{
    const uint8_t offset = block_offset(src, dst);
    uint32_t word = 0;
    long wrong = 0;
    for (size_t j = 0; j < n; j++) {
        if (0 == (j & 3)) {
            word = pattern_word(j >> 2, seed);
        }
        wrong += (uint8_t)buf[j] != (uint8_t)((word >> (8 * (j & 3))) + offset);
    }
    return wrong;
}

static void fill_floats(float *buf, size_t n, size_t first, int rank, unsigned seed)
{
    for (size_t j = 0; j < n; j++) {
        buf[j] = (float)(rank + 1) + (float)float_offset(first + j, seed);
    }
}

/* Elements first..first+n-1 must equal the sum over ranks lo..hi-1 of
 * (rank + 1 + offset), that is (hi(hi+1) - lo(lo+1))/2 + (hi-lo) * offset. */
static long count_wrong_sums(const float *buf, size_t n, size_t first, int lo, int hi,
                             unsigned seed)
{
    const double ranks_part = ((double)hi * (hi + 1) - (double)lo * (lo + 1)) / 2.0;
    const double nranks = hi - lo;
    long wrong = 0;
    for (size_t j = 0; j < n; j++) {
        float expect = (float)(ranks_part + nranks * float_offset(first + j, seed));
        wrong += buf[j] != expect;
    }
    return wrong;
}

static int call_bcast(const coll_args *a, MPI_Comm comm)
{
    return MPI_Bcast(a->sendbuf, a->count, MPI_CHAR, 0, comm);
}

static void fill_bcast(const coll_args *a, unsigned seed)
{
    if (0 == a->rank) {
        fill_bytes(a->sendbuf, (size_t)a->count, 0, 0, seed);
    } else {
        fill_sentinel(a->sendbuf, (size_t)a->count);
    }
}

static long verify_bcast(const coll_args *a, unsigned seed)
{
    return count_wrong_bytes(a->sendbuf, (size_t)a->count, 0, 0, seed);
}

static int call_allgather(const coll_args *a, MPI_Comm comm)
{
    return MPI_Allgather(a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR, comm);
}

static int call_gather(const coll_args *a, MPI_Comm comm)
{
    return MPI_Gather(a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR, 0, comm);
}

static void fill_own_block(const coll_args *a, unsigned seed)
{
    fill_bytes(a->sendbuf, (size_t)a->count, a->rank, 0, seed);
    fill_sentinel(a->recvbuf, (size_t)a->count * (size_t)a->nprocs);
}

static long verify_every_block(const coll_args *a, unsigned seed)
{
    long wrong = 0;
    size_t n = (size_t)a->count;
    for (int q = 0; q < a->nprocs; q++) {
        wrong += count_wrong_bytes(a->recvbuf + (size_t)q * n, n, q, 0, seed);
    }
    return wrong;
}

static long verify_gather(const coll_args *a, unsigned seed)
{
    return 0 == a->rank ? verify_every_block(a, seed) : 0;
}

static void fill_gather(const coll_args *a, unsigned seed)
{
    fill_bytes(a->sendbuf, (size_t)a->count, a->rank, 0, seed);
    if (0 == a->rank) {
        fill_sentinel(a->recvbuf, (size_t)a->count * (size_t)a->nprocs);
    }
}

static int call_alltoall(const coll_args *a, MPI_Comm comm)
{
    return MPI_Alltoall(a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR, comm);
}

static void fill_alltoall(const coll_args *a, unsigned seed)
{
    size_t n = (size_t)a->count;
    for (int d = 0; d < a->nprocs; d++) {
        fill_bytes(a->sendbuf + (size_t)d * n, n, a->rank, d, seed);
    }
    fill_sentinel(a->recvbuf, n * (size_t)a->nprocs);
}

static long verify_alltoall(const coll_args *a, unsigned seed)
{
    long wrong = 0;
    size_t n = (size_t)a->count;
    for (int q = 0; q < a->nprocs; q++) {
        wrong += count_wrong_bytes(a->recvbuf + (size_t)q * n, n, q, a->rank, seed);
    }
    return wrong;
}

static int call_scatter(const coll_args *a, MPI_Comm comm)
{
    return MPI_Scatter(a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR, 0, comm);
}

static void fill_scatter(const coll_args *a, unsigned seed)
{
    size_t n = (size_t)a->count;
    if (0 == a->rank) {
        for (int d = 0; d < a->nprocs; d++) {
            fill_bytes(a->sendbuf + (size_t)d * n, n, 0, d, seed);
        }
    }
    fill_sentinel(a->recvbuf, n);
}

static long verify_scatter(const coll_args *a, unsigned seed)
{
    return count_wrong_bytes(a->recvbuf, (size_t)a->count, 0, a->rank, seed);
}

static int call_allreduce(const coll_args *a, MPI_Comm comm)
{
    return MPI_Allreduce(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op, comm);
}

static int call_reduce(const coll_args *a, MPI_Comm comm)
{
    return MPI_Reduce(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op, 0, comm);
}

static int call_scan(const coll_args *a, MPI_Comm comm)
{
    return MPI_Scan(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op, comm);
}

static int call_exscan(const coll_args *a, MPI_Comm comm)
{
    return MPI_Exscan(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op, comm);
}

static void fill_reduction(const coll_args *a, unsigned seed)
{
    size_t n = (size_t)a->count;
    fill_floats((float *)a->sendbuf, n, 0, a->rank, seed);
    fill_sentinel(a->recvbuf, n * sizeof(float));
}

static long verify_allreduce(const coll_args *a, unsigned seed)
{
    return count_wrong_sums((const float *)a->recvbuf, (size_t)a->count, 0, 0, a->nprocs, seed);
}

static long verify_reduce(const coll_args *a, unsigned seed)
{
    return 0 == a->rank ? verify_allreduce(a, seed) : 0;
}

static long verify_scan(const coll_args *a, unsigned seed)
{
    return count_wrong_sums((const float *)a->recvbuf, (size_t)a->count, 0, 0, a->rank + 1, seed);
}

/* MPI leaves rank 0's exscan result undefined. */
static long verify_exscan(const coll_args *a, unsigned seed)
{
    if (0 == a->rank) {
        return 0;
    }
    return count_wrong_sums((const float *)a->recvbuf, (size_t)a->count, 0, 0, a->rank, seed);
}

static int call_reduce_scatter_block(const coll_args *a, MPI_Comm comm)
{
    return MPI_Reduce_scatter_block(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op, comm);
}

static void fill_reduce_scatter_block(const coll_args *a, unsigned seed)
{
    size_t n = (size_t)a->count;
    fill_floats((float *)a->sendbuf, n * (size_t)a->nprocs, 0, a->rank, seed);
    fill_sentinel(a->recvbuf, n * sizeof(float));
}

static long verify_reduce_scatter_block(const coll_args *a, unsigned seed)
{
    size_t n = (size_t)a->count;
    return count_wrong_sums((const float *)a->recvbuf, n, n * (size_t)a->rank, 0, a->nprocs, seed);
}

static int call_reduce_scatter(const coll_args *a, MPI_Comm comm)
{
    return MPI_Reduce_scatter(a->sendbuf, a->recvbuf, a->rcounts, MPI_FLOAT, a->op, comm);
}

static void fill_reduce_scatter(const coll_args *a, unsigned seed)
{
    fill_floats((float *)a->sendbuf, (size_t)a->count, 0, a->rank, seed);
    fill_sentinel(a->recvbuf, (size_t)a->rcounts[a->rank] * sizeof(float));
}

static long verify_reduce_scatter(const coll_args *a, unsigned seed)
{
    return count_wrong_sums((const float *)a->recvbuf, (size_t)a->rcounts[a->rank],
                            (size_t)a->displs[a->rank], 0, a->nprocs, seed);
}

static size_t bytes_block_of_vector(size_t size, int nprocs, int rank)
{
    (void)rank;
    return size / (size_t)nprocs + sizeof(float);
}

/* ------------------------------------------------------------------------ */
/* Nonblocking and persistent forms: the same arguments as the calls above  */

/* MPI_I<coll> (persistent 0) or MPI_<Coll>_init (persistent 1). */
#define START(name, iname, ...)                                                                    \
    static int start_##name(const coll_args *a, MPI_Comm comm, int persistent, MPI_Request *req)   \
    {                                                                                              \
        return persistent ? PCOLL_INIT(iname)(__VA_ARGS__, comm, MPI_INFO_NULL, req)               \
                          : MPI_I##name(__VA_ARGS__, comm, req);                                   \
    }
START(allreduce, Allreduce, a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op)
START(reduce, Reduce, a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op, 0)
START(bcast, Bcast, a->sendbuf, a->count, MPI_CHAR, 0)
START(allgather, Allgather, a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR)
START(reduce_scatter, Reduce_scatter, a->sendbuf, a->recvbuf, a->rcounts, MPI_FLOAT, a->op)
START(reduce_scatter_block, Reduce_scatter_block, a->sendbuf, a->recvbuf, a->count, MPI_FLOAT,
      a->op)
START(alltoall, Alltoall, a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR)
START(gather, Gather, a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR, 0)
START(scatter, Scatter, a->sendbuf, a->count, MPI_CHAR, a->recvbuf, a->count, MPI_CHAR, 0)
START(scan, Scan, a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op)
START(exscan, Exscan, a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, a->op)
#undef START

/* MPI_Barrier: no buffers, no data to check; the message size only names
 * the point (every size measures the same barrier). */
static int call_barrier(const coll_args *a, MPI_Comm comm)
{
    (void)a;
    return MPI_Barrier(comm);
}

static int count_one(size_t size, int nprocs)
{
    (void)size;
    (void)nprocs;
    return 1;
}

static void fill_nothing(const coll_args *a, unsigned seed)
{
    (void)a;
    (void)seed;
}

static long verify_nothing(const coll_args *a, unsigned seed)
{
    (void)a;
    (void)seed;
    return 0;
}

static int start_barrier(const coll_args *a, MPI_Comm comm, int persistent, MPI_Request *req)
{
    (void)a;
    return persistent ? PCOLL_INIT(Barrier)(comm, MPI_INFO_NULL, req) : MPI_Ibarrier(comm, req);
}

/*
 * Copy floor factors: the per-rank bandwidth term of the best known
 * algorithm (Chan, Heimlich, Purkayastha, van de Geijn, "Collective
 * communication: theory, practice, and experience", CCPE 2007), in units of
 * the message size n:
 *   bytes = beta_factor * (p-1)/p * n   (data every rank must receive)
 *         + gamma_factor * (p-1)/p * n  (data every rank must combine)
 *         + beta_blocks * (p-1) * n     (whole blocks from every other rank)
 * A reduction touches three streams where a copy touches two, so costing it
 * as one copy keeps this a lower bound.
 */
const coll_desc bench_collectives[] = {
    {"allreduce", 1, call_allreduce, count_floats, bytes_one, bytes_one, fill_reduction,
     verify_allreduce, 2, 1, 0, start_allreduce},
    {"reduce", 1, call_reduce, count_floats, bytes_one, bytes_one, fill_reduction, verify_reduce, 1,
     1, 0, start_reduce},
    {"bcast", 0, call_bcast, count_bytes, bytes_one, bytes_none, fill_bcast, verify_bcast, 0, 0, 0,
     start_bcast},
    {"allgather", 0, call_allgather, count_bytes, bytes_one, bytes_all, fill_own_block,
     verify_every_block, 0, 0, 1, start_allgather},
    {"reduce_scatter", 1, call_reduce_scatter, count_floats, bytes_one, bytes_block_of_vector,
     fill_reduce_scatter, verify_reduce_scatter, 1, 1, 0, start_reduce_scatter},
    {"reduce_scatter_block", 1, call_reduce_scatter_block, count_float_blocks, bytes_one,
     bytes_block_of_vector, fill_reduce_scatter_block, verify_reduce_scatter_block, 1, 1, 0,
     start_reduce_scatter_block},
    {"alltoall", 0, call_alltoall, count_bytes, bytes_all, bytes_all, fill_alltoall,
     verify_alltoall, 0, 0, 1, start_alltoall},
    {"gather", 0, call_gather, count_bytes, bytes_one, bytes_all_at_root, fill_gather,
     verify_gather, 0, 0, 1, start_gather},
    {"scatter", 0, call_scatter, count_bytes, bytes_all_at_root, bytes_one, fill_scatter,
     verify_scatter, 0, 0, 1, start_scatter},
    {"scan", 1, call_scan, count_floats, bytes_one, bytes_one, fill_reduction, verify_scan, 1, 1, 0,
     start_scan},
    {"exscan", 1, call_exscan, count_floats, bytes_one, bytes_one, fill_reduction, verify_exscan, 1,
     1, 0, start_exscan},
    {"barrier", 0, call_barrier, count_one, bytes_none, bytes_none, fill_nothing, verify_nothing, 0,
     0, 0, start_barrier},
};
_Static_assert(sizeof(bench_collectives) / sizeof(bench_collectives[0]) == NUM_COLLECTIVES,
               "NUM_COLLECTIVES counts the table");

/* Bcast's bound is n for every receiver regardless of p (pipelined). */
double floor_bytes(const coll_desc *cd, size_t size, int nprocs)
{
    double n = (double)size, p = (double)nprocs;
    if (0 == strcmp(cd->name, "bcast")) {
        return n;
    }
    return (cd->beta_factor + cd->gamma_factor) * (p - 1.0) / p * n +
           cd->beta_blocks * (p - 1.0) * n;
}

void coll_args_set_size(const coll_desc *cd, coll_args *a, size_t size)
{
    a->size = size;
    a->count = cd->count(size, a->nprocs);
    if (0 == strcmp(cd->name, "reduce_scatter")) {
        int total = a->count, offset = 0;
        for (int q = 0; q < a->nprocs; q++) {
            a->rcounts[q] = total / a->nprocs + (q < total % a->nprocs);
            a->displs[q] = offset;
            offset += a->rcounts[q];
        }
    }
}
