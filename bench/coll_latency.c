/*
 * coll_latency: OSU-style latency benchmark for the collectives coll/bufpool
 * implements, able to measure several coll selections side by side in one job.
 *
 * Conventions kept from the OSU micro-benchmarks so numbers compare directly:
 * message sizes by powers of two, warm-up then timed iterations with a barrier
 * after each call, each rank timing its own calls, and average/min/max over
 * ranks of the per-rank mean; the table columns start exactly like
 * "osu_<coll> -f".  Sizes follow OSU's meaning (per-rank block for allgather,
 * gather, scatter; per-pair block for alltoall; whole vector otherwise).
 *
 * Side by side: each configuration is a duplicate of MPI_COMM_WORLD created
 * with Open MPI's per-communicator "ompi_comm_coll_preference" info key, so
 * one job can alternate bufpool, Open MPI's default selection, adapt and
 * basic size by size (and repetition by repetition), and machine drift hits
 * them alike.  A pseudo-configuration "floor" times plain memcpy of the bytes
 * a bandwidth-optimal algorithm must move, on every rank at once.
 */
#include "bufpool_config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define LARGE_MESSAGE_SIZE  8192 /* OSU: above this, the "large" counts apply */
#define FIELD_WIDTH         20   /* OSU column width and precision */
#define FLOAT_PRECISION     2
#define MAX_CONFIGS         8
#define MAX_SIZES           64
#define MAX_REPEAT          99
#define DEFAULT_MAX_SIZE    ((size_t)64 << 20)
#define DEFAULT_MEM_LIMIT   ((size_t)4 << 30)
#define BUDGET_MIN_ITERS    3 /* never fewer timed calls per point than this */
#define BUDGET_MIN_WARMUP   2 /* a pool needs one call to fill, one to prove it reuses */
#define COLL_PREFERENCE_KEY "ompi_comm_coll_preference"

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

typedef struct {
    const char *collectives; /* comma list or "all" */
    const char *configs;     /* comma list */
    size_t min_size, max_size;
    long iterations, warmup, iterations_large, warmup_large;
    size_t large_budget; /* bytes; 0 keeps OSU's fixed large counts */
    int repeat;
    size_t mem_limit;
    const char *csv_path;
    const char *tag;        /* free text copied into every CSV row (e.g. job round) */
    const char *world_name; /* label of the "world" configuration in the output */
} bench_options;

static int world_rank, world_size;

static void root_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void root_printf(const char *fmt, ...)
{
    if (0 != world_rank) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
}

static void usage(const char *prog)
{
    root_printf(
        "Usage: %s [options]\n"
        "  -c, --collective LIST     collectives to run, comma separated, or \"all\" (default):\n"
        "                            allreduce reduce bcast allgather reduce_scatter\n"
        "                            reduce_scatter_block alltoall gather scatter scan exscan\n"
        "  -C, --configs LIST        coll selections to alternate in this job (default world):\n"
        "                            world   = whatever this mpirun selected (job-level mode)\n"
        "                            default = Open MPI's own selection without bufpool\n"
        "                            bufpool = bufpool first (skipped if it is not loaded)\n"
        "                            adapt   = adapt first, the rest as default\n"
        "                            basic   = basic only (with self and libnbc)\n"
        "                            floor   = memcpy of the bytes the collective must move\n"
        "  -m, --message-size [MIN:]MAX  sizes in bytes, suffixes K M G (default 1:64M)\n"
        "  -i, --iterations N        timed iterations up to 8 KiB (default 1000)\n"
        "  -x, --warmup N            warm-up iterations up to 8 KiB (default 200)\n"
        "      --iterations-large N  timed iterations above 8 KiB (default 100)\n"
        "      --warmup-large N      warm-up iterations above 8 KiB (default 10)\n"
        "  -b, --large-budget BYTES  above 8 KiB, cap iterations x size at BYTES (min %d\n"
        "                            timed, %d warm-up); 0 = OSU's fixed counts (default)\n"
        "  -r, --repeat N            measure every point N times, interleaved (default 1);\n"
        "                            tables show the median\n"
        "  -M, --mem-limit BYTES     per-process buffer limit; larger sizes are skipped\n"
        "                            (default 4G)\n"
        "  -o, --csv FILE            append one CSV row per measured point to FILE\n"
        "  -t, --tag TEXT            copy TEXT into the CSV tag column\n"
        "  -n, --world-name NAME     label the world configuration NAME in tables and CSV\n"
        "                            (job mode: the configuration this mpirun selected)\n"
        "  -f, --full                accepted for OSU compatibility (columns are always full)\n"
        "  -h, --help                this message\n",
        prog, BUDGET_MIN_ITERS, BUDGET_MIN_WARMUP);
}

/* Sizes accept K/M/G (powers of 1024), as MCA size parameters do. */
static int parse_size(const char *text, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (end == text || ERANGE == errno || '-' == text[0]) {
        return -1;
    }
    unsigned shift = 0;
    switch (*end) {
        case 'k':
        case 'K':
            shift = 10;
            end++;
            break;
        case 'm':
        case 'M':
            shift = 20;
            end++;
            break;
        case 'g':
        case 'G':
            shift = 30;
            end++;
            break;
        default:
            break;
    }
    if ('\0' != *end || (shift && value > (ULLONG_MAX >> shift))) {
        return -1;
    }
    *out = (size_t)(value << shift);
    return 0;
}

static int parse_count(const char *text, long min, long *out)
{
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (end == text || '\0' != *end || ERANGE == errno || value < min) {
        return -1;
    }
    *out = value;
    return 0;
}

static int parse_size_range(const char *text, bench_options *opt)
{
    const char *colon = strchr(text, ':');
    if (NULL == colon) {
        return parse_size(text, &opt->max_size);
    }
    char min_text[64];
    size_t len = (size_t)(colon - text);
    if (len >= sizeof(min_text)) {
        return -1;
    }
    memcpy(min_text, text, len);
    min_text[len] = '\0';
    if (len > 0 && 0 != parse_size(min_text, &opt->min_size)) {
        return -1;
    }
    if ('\0' != colon[1] && 0 != parse_size(colon + 1, &opt->max_size)) {
        return -1;
    }
    return 0;
}

/* Returns 0 to run, 1 to stop quietly (help), 2 on a bad option. */
static int parse_options(int argc, char **argv, bench_options *opt)
{
    enum { OPT_ITER_LARGE = 256, OPT_WARMUP_LARGE };
    static const struct option long_options[] = {
        {"collective", required_argument, NULL, 'c'},
        {"configs", required_argument, NULL, 'C'},
        {"message-size", required_argument, NULL, 'm'},
        {"iterations", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, 'x'},
        {"iterations-large", required_argument, NULL, OPT_ITER_LARGE},
        {"warmup-large", required_argument, NULL, OPT_WARMUP_LARGE},
        {"large-budget", required_argument, NULL, 'b'},
        {"repeat", required_argument, NULL, 'r'},
        {"mem-limit", required_argument, NULL, 'M'},
        {"csv", required_argument, NULL, 'o'},
        {"tag", required_argument, NULL, 't'},
        {"world-name", required_argument, NULL, 'n'},
        {"full", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *opt = (bench_options){
        .collectives = "all",
        .configs = "world",
        .min_size = 1,
        .max_size = DEFAULT_MAX_SIZE,
        .iterations = 1000,
        .warmup = 200,
        .iterations_large = 100,
        .warmup_large = 10,
        .repeat = 1,
        .mem_limit = DEFAULT_MEM_LIMIT,
        .tag = "",
        .world_name = "world",
    };
    int c;
    long repeat = 1;
    while (-1 != (c = getopt_long(argc, argv, "c:C:m:i:x:b:r:M:o:t:n:fh", long_options, NULL))) {
        const char *bad = NULL;
        switch (c) {
            case 'c':
                opt->collectives = optarg;
                break;
            case 'C':
                opt->configs = optarg;
                break;
            case 'm':
                if (0 != parse_size_range(optarg, opt)) {
                    bad = "-m wants [MIN:]MAX in bytes, with an optional K, M or G suffix";
                }
                break;
            case 'i':
                if (0 != parse_count(optarg, 1, &opt->iterations)) {
                    bad = "-i wants a positive number of timed iterations";
                }
                break;
            case 'x':
                if (0 != parse_count(optarg, 0, &opt->warmup)) {
                    bad = "-x wants a number of warm-up iterations >= 0";
                }
                break;
            case OPT_ITER_LARGE:
                if (0 != parse_count(optarg, 1, &opt->iterations_large)) {
                    bad = "--iterations-large wants a positive number";
                }
                break;
            case OPT_WARMUP_LARGE:
                if (0 != parse_count(optarg, 0, &opt->warmup_large)) {
                    bad = "--warmup-large wants a number >= 0";
                }
                break;
            case 'b':
                if (0 != parse_size(optarg, &opt->large_budget)) {
                    bad = "-b wants a byte count (K, M, G suffixes allowed), 0 to disable";
                }
                break;
            case 'r':
                if (0 != parse_count(optarg, 1, &repeat) || repeat > MAX_REPEAT) {
                    bad = "-r wants a repetition count between 1 and 99";
                }
                opt->repeat = (int)repeat;
                break;
            case 'M':
                if (0 != parse_size(optarg, &opt->mem_limit) || 0 == opt->mem_limit) {
                    bad = "-M wants a positive byte count (K, M, G suffixes allowed)";
                }
                break;
            case 'o':
                opt->csv_path = optarg;
                break;
            case 't':
                opt->tag = optarg;
                if (NULL != strpbrk(optarg, ",\n\"")) {
                    bad = "-t must not contain commas, quotes or newlines (it is a CSV field)";
                }
                break;
            case 'n':
                opt->world_name = optarg;
                if (strlen(optarg) == 0 || strlen(optarg) >= 16 ||
                    NULL != strpbrk(optarg, ",\n\" ")) {
                    bad = "-n wants a short label (1-15 characters, no commas, quotes or spaces)";
                }
                break;
            case 'f':
                break;
            case 'h':
                usage(argv[0]);
                return 1;
            default:
                root_printf("%s: unknown option; see -h\n", argv[0]);
                return 2;
        }
        if (NULL != bad) {
            root_printf("%s: bad value \"%s\": %s\n", argv[0], optarg, bad);
            return 2;
        }
    }
    if (optind < argc) {
        root_printf("%s: unexpected argument \"%s\"; see -h\n", argv[0], argv[optind]);
        return 2;
    }
    if (0 == opt->min_size || opt->min_size > opt->max_size || opt->max_size > ((size_t)1 << 40)) {
        root_printf("%s: -m: need 1 <= MIN <= MAX <= 1T (got %zu:%zu)\n", argv[0], opt->min_size,
                    opt->max_size);
        return 2;
    }
    return 0;
}

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

typedef struct {
    size_t size;  /* OSU message size in bytes */
    int count;    /* elements per call argument (per block where blocks apply) */
    int *rcounts; /* reduce_scatter: elements each rank receives */
    int *displs;  /* reduce_scatter: where each rank's block starts */
    char *sendbuf, *recvbuf;
    int rank, nprocs;
} coll_args;

typedef struct coll_desc coll_desc;
struct coll_desc {
    const char *name;
    int reduction; /* MPI_FLOAT with MPI_SUM; otherwise MPI_CHAR */
    int (*call)(const coll_args *a, MPI_Comm comm);
    /* Elements per argument for an OSU size; 0 skips the size, as OSU does. */
    int (*count)(size_t size, int nprocs);
    /* Bytes of each buffer a rank needs for an OSU size. */
    size_t (*send_bytes)(size_t size, int nprocs, int rank);
    size_t (*recv_bytes)(size_t size, int nprocs, int rank);
    void (*fill)(const coll_args *a, unsigned seed);
    long (*verify)(const coll_args *a, unsigned seed); /* returns wrong elements */
    /* Bytes per rank a bandwidth-optimal algorithm moves (see floor_bytes). */
    double beta_factor, gamma_factor, beta_blocks;
};

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
    return MPI_Allreduce(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, MPI_SUM, comm);
}

static int call_reduce(const coll_args *a, MPI_Comm comm)
{
    return MPI_Reduce(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, MPI_SUM, 0, comm);
}

static int call_scan(const coll_args *a, MPI_Comm comm)
{
    return MPI_Scan(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, MPI_SUM, comm);
}

static int call_exscan(const coll_args *a, MPI_Comm comm)
{
    return MPI_Exscan(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, MPI_SUM, comm);
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
    return MPI_Reduce_scatter_block(a->sendbuf, a->recvbuf, a->count, MPI_FLOAT, MPI_SUM, comm);
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
    return MPI_Reduce_scatter(a->sendbuf, a->recvbuf, a->rcounts, MPI_FLOAT, MPI_SUM, comm);
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
static const coll_desc collectives[] = {
    {"allreduce", 1, call_allreduce, count_floats, bytes_one, bytes_one, fill_reduction,
     verify_allreduce, 2, 1, 0},
    {"reduce", 1, call_reduce, count_floats, bytes_one, bytes_one, fill_reduction, verify_reduce, 1,
     1, 0},
    {"bcast", 0, call_bcast, count_bytes, bytes_one, bytes_none, fill_bcast, verify_bcast, 0, 0, 0},
    {"allgather", 0, call_allgather, count_bytes, bytes_one, bytes_all, fill_own_block,
     verify_every_block, 0, 0, 1},
    {"reduce_scatter", 1, call_reduce_scatter, count_floats, bytes_one, bytes_block_of_vector,
     fill_reduce_scatter, verify_reduce_scatter, 1, 1, 0},
    {"reduce_scatter_block", 1, call_reduce_scatter_block, count_float_blocks, bytes_one,
     bytes_block_of_vector, fill_reduce_scatter_block, verify_reduce_scatter_block, 1, 1, 0},
    {"alltoall", 0, call_alltoall, count_bytes, bytes_all, bytes_all, fill_alltoall,
     verify_alltoall, 0, 0, 1},
    {"gather", 0, call_gather, count_bytes, bytes_one, bytes_all_at_root, fill_gather,
     verify_gather, 0, 0, 1},
    {"scatter", 0, call_scatter, count_bytes, bytes_all_at_root, bytes_one, fill_scatter,
     verify_scatter, 0, 0, 1},
    {"scan", 1, call_scan, count_floats, bytes_one, bytes_one, fill_reduction, verify_scan, 1, 1,
     0},
    {"exscan", 1, call_exscan, count_floats, bytes_one, bytes_one, fill_reduction, verify_exscan, 1,
     1, 0},
};
#define NUM_COLLECTIVES ((int)(sizeof(collectives) / sizeof(collectives[0])))

/* Bcast's bound is n for every receiver regardless of p (pipelined). */
static double floor_bytes(const coll_desc *cd, size_t size, int nprocs)
{
    double n = (double)size, p = (double)nprocs;
    if (0 == strcmp(cd->name, "bcast")) {
        return n;
    }
    return (cd->beta_factor + cd->gamma_factor) * (p - 1.0) / p * n +
           cd->beta_blocks * (p - 1.0) * n;
}

/* ------------------------------------------------------------------------ */
/* MPI_T probes: pool and bufpool counters, and process counters             */

/* One handle per variable for the whole run: Open MPI reports a counter
 * (and a timer or aggregate) relative to the moment its handle was
 * allocated, so a handle made per read would always read about zero. */
typedef struct {
    int present;
    MPI_T_pvar_handle handle;
    MPI_Datatype type;
} pvar_probe;

static MPI_T_pvar_session probe_session = MPI_T_PVAR_SESSION_NULL;
static int mpit_ready;

/* MPI_T_pvar_get_index wants the class, which the contract leaves to the
 * component: try each. */
static const int pvar_classes[] = {
    MPI_T_PVAR_CLASS_COUNTER,       MPI_T_PVAR_CLASS_LEVEL,        MPI_T_PVAR_CLASS_SIZE,
    MPI_T_PVAR_CLASS_HIGHWATERMARK, MPI_T_PVAR_CLASS_LOWWATERMARK, MPI_T_PVAR_CLASS_AGGREGATE,
    MPI_T_PVAR_CLASS_STATE,         MPI_T_PVAR_CLASS_TIMER,        MPI_T_PVAR_CLASS_PERCENTAGE,
    MPI_T_PVAR_CLASS_GENERIC,
};

static pvar_probe probe_open(const char *name)
{
    pvar_probe probe = {0};
    if (!mpit_ready) {
        return probe;
    }
    for (size_t k = 0; k < sizeof(pvar_classes) / sizeof(pvar_classes[0]); k++) {
        int index;
        if (MPI_SUCCESS != MPI_T_pvar_get_index(name, pvar_classes[k], &index)) {
            continue;
        }
        char pname[256], desc[256];
        int plen = sizeof(pname), dlen = sizeof(desc), verbosity, var_class, bind, readonly;
        int continuous, atomic, count = 0;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(index, pname, &plen, &verbosity, &var_class,
                                               &probe.type, &enumtype, desc, &dlen, &bind,
                                               &readonly, &continuous, &atomic) ||
            MPI_T_BIND_NO_OBJECT != bind ||
            MPI_SUCCESS !=
                MPI_T_pvar_handle_alloc(probe_session, index, NULL, &probe.handle, &count)) {
            continue;
        }
        if (1 != count ||
            (!continuous && MPI_SUCCESS != MPI_T_pvar_start(probe_session, probe.handle))) {
            MPI_T_pvar_handle_free(probe_session, &probe.handle);
            continue;
        }
        probe.present = 1;
        break;
    }
    return probe;
}

/* NaN when the variable does not exist (component not loaded): the tables
 * print it as "n/a". */
static double probe_read(const pvar_probe *probe)
{
    if (!probe->present) {
        return NAN;
    }
    union {
        unsigned long long ull;
        unsigned long ul;
        unsigned u;
        int i;
        long long ll;
        double d;
        char pad[64];
    } v;
    memset(&v, 0, sizeof(v));
    if (MPI_SUCCESS != MPI_T_pvar_read(probe_session, probe->handle, &v)) {
        return NAN;
    }
    if (MPI_UNSIGNED_LONG_LONG == probe->type) {
        return (double)v.ull;
    }
    if (MPI_UNSIGNED_LONG == probe->type) {
        return (double)v.ul;
    }
    if (MPI_UNSIGNED == probe->type) {
        return (double)v.u;
    }
    if (MPI_INT == probe->type) {
        return (double)v.i;
    }
    if (MPI_LONG_LONG == probe->type || MPI_COUNT == probe->type) {
        return (double)v.ll;
    }
    if (MPI_DOUBLE == probe->type) {
        return v.d;
    }
    return NAN;
}

/* Reads an integer or size-string control variable; returns -1 if absent. */
static double cvar_read_number(const char *name)
{
    int index, count, verbosity, bind, scope, nlen = 0, dlen = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle;
    if (!mpit_ready || MPI_SUCCESS != MPI_T_cvar_get_index(name, &index) ||
        MPI_SUCCESS != MPI_T_cvar_get_info(index, NULL, &nlen, &verbosity, &type, &enumtype, NULL,
                                           &dlen, &bind, &scope) ||
        MPI_SUCCESS != MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        return -1.0;
    }
    double value = -1.0;
    if (MPI_CHAR == type) {
        char *text = calloc((size_t)count + 1, 1);
        size_t bytes;
        if (NULL != text && MPI_SUCCESS == MPI_T_cvar_read(handle, text) &&
            0 == parse_size(text, &bytes)) {
            value = (double)bytes;
        }
        free(text);
    } else {
        union {
            int i;
            unsigned u;
            unsigned long ul;
            unsigned long long ull;
            char pad[64];
        } v;
        memset(&v, 0, sizeof(v));
        if (MPI_SUCCESS == MPI_T_cvar_read(handle, &v)) {
            if (MPI_INT == type) {
                value = v.i;
            } else if (MPI_UNSIGNED == type) {
                value = v.u;
            } else if (MPI_UNSIGNED_LONG == type) {
                value = (double)v.ul;
            } else if (MPI_UNSIGNED_LONG_LONG == type) {
                value = (double)v.ull;
            }
        }
    }
    MPI_T_cvar_handle_free(&handle);
    return value;
}

static int cvar_exists(const char *name)
{
    int index;
    return mpit_ready && MPI_SUCCESS == MPI_T_cvar_get_index(name, &index);
}

typedef struct {
    pvar_probe slabs_mapped, direct_allocs, reg_regions, scratch_peak;
    pvar_probe own_calls[NUM_COLLECTIVES], fallbacks[NUM_COLLECTIVES];
} bufpool_probes;

static bufpool_probes probes;

static void probes_open_all(void)
{
    int provided;
    mpit_ready = MPI_SUCCESS == MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) &&
                 MPI_SUCCESS == MPI_T_pvar_session_create(&probe_session);
    probes.slabs_mapped = probe_open("mpool_regpar_slabs_mapped");
    probes.direct_allocs = probe_open("mpool_regpar_direct_allocs");
    probes.reg_regions = probe_open("mpool_regpar_reg_regions");
    probes.scratch_peak = probe_open("coll_bufpool_scratch_bytes_peak");
    for (int k = 0; k < NUM_COLLECTIVES; k++) {
        char name[128];
        snprintf(name, sizeof(name), "coll_bufpool_%s_calls", collectives[k].name);
        probes.own_calls[k] = probe_open(name);
        snprintf(name, sizeof(name), "coll_bufpool_%s_fallbacks", collectives[k].name);
        probes.fallbacks[k] = probe_open(name);
    }
}

typedef struct {
    double minflt, maxrss_kib;
    double pool_sys_allocs, pool_regs, scratch_peak, own_calls, fallbacks;
} counters;

/* Pool counters are process-wide: only configurations that run bufpool
 * read them, so that no other row shows numbers it did not cause. */
static counters counters_sample(int coll_index, int with_pool)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    counters c = {
        .minflt = (double)ru.ru_minflt,
        .maxrss_kib = (double)ru.ru_maxrss,
        .pool_sys_allocs = NAN,
        .pool_regs = NAN,
        .scratch_peak = NAN,
        .own_calls = NAN,
        .fallbacks = NAN,
    };
    if (with_pool) {
        c.pool_sys_allocs = probe_read(&probes.slabs_mapped) + probe_read(&probes.direct_allocs);
        c.pool_regs = probe_read(&probes.reg_regions);
        c.scratch_peak = probe_read(&probes.scratch_peak);
        c.own_calls = probe_read(&probes.own_calls[coll_index]);
        c.fallbacks = probe_read(&probes.fallbacks[coll_index]);
    }
    return c;
}

/* ------------------------------------------------------------------------ */
/* Configurations                                                            */

typedef struct {
    char name[16];
    int is_floor;
    int uses_bufpool; /* its rows get the pool columns */
    MPI_Comm comm;
} bench_config;

/* Every loaded coll component, from its priority control variable. */
static int list_coll_components(char names[][32], int max)
{
    int num = 0, n = 0;
    if (!mpit_ready || MPI_SUCCESS != MPI_T_cvar_get_num(&num)) {
        return 0;
    }
    for (int i = 0; i < num && n < max; i++) {
        char name[256];
        int nlen = sizeof(name), dlen = 0, verbosity, bind, scope;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verbosity, &type, &enumtype, NULL,
                                               &dlen, &bind, &scope)) {
            continue;
        }
        size_t len = strlen(name);
        const char *suffix = "_priority";
        if (len > 5 + strlen(suffix) && 0 == strncmp(name, "coll_", 5) &&
            0 == strcmp(name + len - strlen(suffix), suffix) && len - 5 - strlen(suffix) < 32) {
            size_t clen = len - 5 - strlen(suffix);
            memcpy(names[n], name + 5, clen);
            names[n][clen] = '\0';
            if (0 != strcmp(names[n], "base")) {
                n++;
            }
        }
    }
    return n;
}

/* The preference value for a configuration: listed components go first, and
 * everything after '^' is excluded. */
static int config_preference(const char *config, char *pref, size_t len)
{
    if (0 == strcmp(config, "default")) {
        snprintf(pref, len, "^bufpool");
    } else if (0 == strcmp(config, "bufpool")) {
        snprintf(pref, len, "bufpool");
    } else if (0 == strcmp(config, "adapt")) {
        snprintf(pref, len, "adapt,^bufpool");
    } else if (0 == strcmp(config, "basic")) {
        char comps[64][32];
        int n = list_coll_components(comps, 64);
        size_t used = (size_t)snprintf(pref, len, "basic,self,libnbc");
        const char *sep = ",^";
        for (int i = 0; i < n && used < len; i++) {
            if (0 == strcmp(comps[i], "basic") || 0 == strcmp(comps[i], "self") ||
                0 == strcmp(comps[i], "libnbc")) {
                continue;
            }
            used += (size_t)snprintf(pref + used, len - used, "%s%s", sep, comps[i]);
            sep = ",";
        }
        if (used >= len) {
            return -1;
        }
    } else {
        return -1;
    }
    return 0;
}

static int config_available(const char *config, const char **why)
{
    if (0 == strcmp(config, "bufpool") && !cvar_exists("coll_bufpool_priority")) {
        *why = "coll/bufpool is not loaded (no coll_bufpool_priority variable); put the directory "
               "of mca_coll_bufpool.so in OMPI_MCA_mca_base_component_path";
        return 0;
    }
    if (0 == strcmp(config, "adapt") && !cvar_exists("coll_adapt_priority")) {
        *why = "coll/adapt is not part of this Open MPI";
        return 0;
    }
    if (0 == strcmp(config, "basic") && !cvar_exists("coll_basic_priority")) {
        *why = "coll/basic is not loaded";
        return 0;
    }
    return 1;
}

static int configs_create(const char *list, const char *world_name, bench_config *configs, int max)
{
    char *copy = strdup(list);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok;
         tok = strtok_r(NULL, ",", &save)) {
        const char *why = NULL;
        int known = 0 == strcmp(tok, "world") || 0 == strcmp(tok, "floor") ||
                    0 == strcmp(tok, "default") || 0 == strcmp(tok, "bufpool") ||
                    0 == strcmp(tok, "adapt") || 0 == strcmp(tok, "basic");
        if (!known) {
            root_printf("coll_latency: -C: unknown configuration \"%s\" (use world, default, "
                        "bufpool, adapt, basic, floor)\n",
                        tok);
            free(copy);
            return -1;
        }
        if (n == max) {
            root_printf("coll_latency: -C: at most %d configurations\n", max);
            free(copy);
            return -1;
        }
        if (!config_available(tok, &why)) {
            root_printf("# configuration %s skipped: %s\n", tok, why);
            continue;
        }
        bench_config *cfg = &configs[n];
        memset(cfg, 0, sizeof(*cfg));
        snprintf(cfg->name, sizeof(cfg->name), "%s", 0 == strcmp(tok, "world") ? world_name : tok);
        cfg->is_floor = 0 == strcmp(tok, "floor");
        cfg->uses_bufpool = 0 == strcmp(tok, "bufpool") ||
                            (0 == strcmp(tok, "world") && probes.scratch_peak.present);
        cfg->comm = MPI_COMM_NULL;
        if (0 == strcmp(tok, "world")) {
            MPI_Comm_dup(MPI_COMM_WORLD, &cfg->comm);
        } else if (!cfg->is_floor) {
            char pref[1024];
            MPI_Info info;
            if (0 != config_preference(tok, pref, sizeof(pref))) {
                root_printf("coll_latency: too many coll components to build the %s preference\n",
                            tok);
                free(copy);
                return -1;
            }
            MPI_Info_create(&info);
            MPI_Info_set(info, COLL_PREFERENCE_KEY, pref);
            MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &cfg->comm);
            MPI_Info_free(&info);
            root_printf("# configuration %s: communicator info %s=%s\n", tok, COLL_PREFERENCE_KEY,
                        pref);
        }
        n++;
    }
    free(copy);
    return n;
}

/* ------------------------------------------------------------------------ */
/* Measurement                                                               */

typedef struct {
    double avg_us, min_us, max_us;
    double p50_us; /* each rank's median call, averaged over ranks */
    long iterations;
    double wrong;        /* data-check failures, all ranks */
    double minflt;       /* minor page faults in the timed loop, all ranks */
    double rss_growth;   /* peak RSS growth in the timed loop, KiB, worst rank */
    double sys_allocs;   /* pool slabs mapped + direct allocations, all ranks */
    double regs;         /* pool registrations, all ranks */
    double scratch_peak; /* bufpool scratch high-water, worst rank */
    double own_calls, fallbacks;
} point_result;

static MPI_Comm sync_comm; /* barriers and statistics, same for every configuration */

static void copy_floor_once(char *dst, const char *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    /* the copy is the measurement: keep the compiler from dropping it */
    __asm__ __volatile__("" : : "r"(dst) : "memory");
}

typedef struct {
    const coll_desc *cd;
    int coll_index;
    coll_args args;
    char *floor_src, *floor_dst;
    size_t floor_bytes;
    double *samples; /* one slot per timed call */
} point_setup;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* samples, when given, receives each call's duration (for the median). */
static int run_calls(const point_setup *ps, const bench_config *cfg, long calls, double *elapsed,
                     double *samples)
{
    double total = 0.0;
    for (long i = 0; i < calls; i++) {
        double t0 = MPI_Wtime();
        if (cfg->is_floor) {
            copy_floor_once(ps->floor_dst, ps->floor_src, ps->floor_bytes);
        } else if (MPI_SUCCESS != ps->cd->call(&ps->args, cfg->comm)) {
            return -1;
        }
        double t1 = MPI_Wtime();
        MPI_Barrier(sync_comm);
        total += t1 - t0;
        if (NULL != samples) {
            samples[i] = t1 - t0;
        }
    }
    *elapsed = total;
    return 0;
}

static double delta(double after, double before)
{
    return isnan(after) || isnan(before) ? NAN : after - before;
}

static point_result measure_point(const point_setup *ps, const bench_config *cfg, long iters,
                                  long warmup, unsigned check_seed)
{
    point_result r = {.iterations = iters};
    double elapsed = 0.0;
    int failed = 0;
    MPI_Barrier(sync_comm);
    failed |= run_calls(ps, cfg, warmup, &elapsed, NULL);
    MPI_Barrier(sync_comm);
    counters before = counters_sample(ps->coll_index, cfg->uses_bufpool);
    failed |= run_calls(ps, cfg, iters, &elapsed, ps->samples);
    counters after = counters_sample(ps->coll_index, cfg->uses_bufpool);

    long wrong = 0;
    if (!cfg->is_floor && !failed) {
        ps->cd->fill(&ps->args, check_seed);
        MPI_Barrier(sync_comm);
        if (MPI_SUCCESS != ps->cd->call(&ps->args, cfg->comm)) {
            failed = 1;
        } else {
            wrong = ps->cd->verify(&ps->args, check_seed);
        }
    }
    if (failed) {
        wrong = LONG_MAX / 4; /* an MPI error is a failed check, never a number */
    }

    double latency = elapsed * 1e6 / (double)iters;
    /* OSU's mean is what the tables show; the median resists the odd call
     * that a busy machine descheduled. */
    qsort(ps->samples, (size_t)iters, sizeof(double), compare_doubles);
    double p50 = 1e6 * (0 == iters % 2 ? (ps->samples[iters / 2 - 1] + ps->samples[iters / 2]) / 2
                                       : ps->samples[iters / 2]);
    double p50_sum;
    MPI_Reduce(&p50, &p50_sum, 1, MPI_DOUBLE, MPI_SUM, 0, sync_comm);
    r.p50_us = p50_sum / world_size;
    double lat_min, lat_max, lat_sum;
    MPI_Reduce(&latency, &lat_min, 1, MPI_DOUBLE, MPI_MIN, 0, sync_comm);
    MPI_Reduce(&latency, &lat_max, 1, MPI_DOUBLE, MPI_MAX, 0, sync_comm);
    MPI_Reduce(&latency, &lat_sum, 1, MPI_DOUBLE, MPI_SUM, 0, sync_comm);
    r.avg_us = lat_sum / world_size;
    r.min_us = lat_min;
    r.max_us = lat_max;

    /* A counter absent on every rank (NaN) stays NaN through MPI_SUM and MPI_MAX. */
    enum { SUMS = 6, MAXES = 2 };
    double sums[SUMS] = {(double)wrong,
                         after.minflt - before.minflt,
                         delta(after.pool_sys_allocs, before.pool_sys_allocs),
                         delta(after.pool_regs, before.pool_regs),
                         delta(after.own_calls, before.own_calls),
                         delta(after.fallbacks, before.fallbacks)};
    double maxes[MAXES] = {after.maxrss_kib - before.maxrss_kib, after.scratch_peak};
    double sums_out[SUMS], maxes_out[MAXES];
    /* every rank learns the check result: it sets the exit status */
    MPI_Allreduce(sums, sums_out, SUMS, MPI_DOUBLE, MPI_SUM, sync_comm);
    MPI_Allreduce(maxes, maxes_out, MAXES, MPI_DOUBLE, MPI_MAX, sync_comm);
    r.wrong = sums_out[0];
    r.minflt = sums_out[1];
    r.sys_allocs = sums_out[2];
    r.regs = sums_out[3];
    r.own_calls = sums_out[4];
    r.fallbacks = sums_out[5];
    r.rss_growth = maxes_out[0];
    r.scratch_peak = maxes_out[1];
    if (cfg->is_floor) {
        r.minflt = r.rss_growth = NAN;
    }
    if (!cfg->uses_bufpool) {
        r.sys_allocs = r.regs = r.scratch_peak = r.own_calls = r.fallbacks = NAN;
    }
    return r;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static void format_number(char *out, size_t len, double v)
{
    if (isnan(v)) {
        snprintf(out, len, "n/a");
    } else {
        snprintf(out, len, "%.0f", v);
    }
}

static const char *check_text(const point_result *r, const bench_config *cfg, char *buf, size_t len)
{
    if (cfg->is_floor) {
        return "-";
    }
    if (0 == r->wrong) {
        return "ok";
    }
    snprintf(buf, len, "FAIL:%.0f", r->wrong);
    return buf;
}

/* Which module served the calls, as far as the counters can tell. */
static const char *served_by(const point_result *r, const bench_config *cfg)
{
    if (cfg->is_floor) {
        return "memcpy";
    }
    if (!cfg->uses_bufpool || isnan(r->own_calls)) {
        return cfg->name;
    }
    if (r->own_calls > 0 && r->fallbacks > 0) {
        return "mixed";
    }
    if (r->own_calls > 0) {
        return "bufpool";
    }
    /* neither counter moved: bufpool's module never saw the calls */
    return r->fallbacks > 0 ? "fallback" : "other";
}

static void print_table_header(const coll_desc *cd, const bench_config *cfg)
{
    root_printf("\n# coll_latency MPI_%s latency, %d processes, configuration %s\n", cd->name,
                world_size, cfg->name);
    root_printf("%-*s", 10, "# Size");
    root_printf("%*s%*s%*s", FIELD_WIDTH, "Avg Latency(us)", FIELD_WIDTH, "Min Latency(us)",
                FIELD_WIDTH, "Max Latency(us)");
    root_printf("%*s", 12, "Iterations");
    root_printf("%*s", FIELD_WIDTH, "P50 Latency(us)");
    root_printf("%12s%10s%14s%12s%12s%14s%10s\n", "Check", "MinFlt", "RSSGrow(KiB)", "SysAllocs",
                "NewRegs", "ScratchPeak", "Served");
}

static void print_table_row(size_t size, const point_result *r, const bench_config *cfg)
{
    char chk[32], flt[32], rss[32], sys[32], regs[32], peak[32];
    format_number(flt, sizeof(flt), r->minflt);
    format_number(rss, sizeof(rss), r->rss_growth);
    format_number(sys, sizeof(sys), r->sys_allocs);
    format_number(regs, sizeof(regs), r->regs);
    format_number(peak, sizeof(peak), r->scratch_peak);
    root_printf("%-*zu", 10, size);
    root_printf("%*.*f%*.*f%*.*f", FIELD_WIDTH, FLOAT_PRECISION, r->avg_us, FIELD_WIDTH,
                FLOAT_PRECISION, r->min_us, FIELD_WIDTH, FLOAT_PRECISION, r->max_us);
    root_printf("%*ld", 12, r->iterations);
    root_printf("%*.*f", FIELD_WIDTH, FLOAT_PRECISION, r->p50_us);
    root_printf("%12s%10s%14s%12s%12s%14s%10s\n", check_text(r, cfg, chk, sizeof(chk)), flt, rss,
                sys, regs, peak, served_by(r, cfg));
}

static void csv_header(FILE *csv)
{
    fprintf(csv, "tag,np,collective,config,size,rep,avg_us,min_us,max_us,iterations,check,"
                 "minflt,rss_growth_kib,sys_allocs,new_regs,scratch_peak,own_calls,fallbacks,"
                 "served,p50_us\n");
}

static void csv_row(FILE *csv, const char *tag, const coll_desc *cd, const bench_config *cfg,
                    size_t size, int rep, const point_result *r)
{
    char chk[32], v[6][32];
    format_number(v[0], sizeof(v[0]), r->minflt);
    format_number(v[1], sizeof(v[1]), r->rss_growth);
    format_number(v[2], sizeof(v[2]), r->sys_allocs);
    format_number(v[3], sizeof(v[3]), r->regs);
    format_number(v[4], sizeof(v[4]), r->scratch_peak);
    format_number(v[5], sizeof(v[5]), r->own_calls);
    char fb[32];
    format_number(fb, sizeof(fb), r->fallbacks);
    fprintf(csv, "%s,%d,%s,%s,%zu,%d,%.3f,%.3f,%.3f,%ld,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.3f\n", tag,
            world_size, cd->name, cfg->name, size, rep, r->avg_us, r->min_us, r->max_us,
            r->iterations, check_text(r, cfg, chk, sizeof(chk)), v[0], v[1], v[2], v[3], v[4], v[5],
            fb, served_by(r, cfg), r->p50_us);
    fflush(csv);
}

/* The repetition whose average latency is the median stands for the point. */
static const point_result *median_rep(const point_result *reps, int n)
{
    double avgs[MAX_REPEAT];
    for (int i = 0; i < n; i++) {
        avgs[i] = reps[i].avg_us;
    }
    qsort(avgs, (size_t)n, sizeof(double), compare_doubles);
    double med = avgs[(n - 1) / 2];
    for (int i = 0; i < n; i++) {
        if (reps[i].avg_us == med) {
            return &reps[i];
        }
    }
    return &reps[0];
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                    */

static void iterations_for(const bench_options *opt, size_t size, long *iters, long *warmup)
{
    if (size <= LARGE_MESSAGE_SIZE) {
        *iters = opt->iterations;
        *warmup = opt->warmup;
        return;
    }
    *iters = opt->iterations_large;
    *warmup = opt->warmup_large;
    if (opt->large_budget > 0) {
        long fit = (long)(opt->large_budget / size);
        if (fit < *iters) {
            *iters = fit < BUDGET_MIN_ITERS ? BUDGET_MIN_ITERS : fit;
        }
        long wfit = fit / 4;
        if (wfit < *warmup) {
            *warmup = wfit < BUDGET_MIN_WARMUP ? BUDGET_MIN_WARMUP : wfit;
        }
    }
}

static void *alloc_touched(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (NULL != p) {
        memset(p, 0, bytes); /* fault the pages in now, not in a timed loop */
    }
    return p;
}

static int run_collective(const bench_options *opt, int coll_index, bench_config *configs,
                          int nconfigs, FILE *csv, int *any_failure)
{
    const coll_desc *cd = &collectives[coll_index];
    const int p = world_size;
    size_t max_size = opt->max_size;
    int has_floor = 0;
    for (int c = 0; c < nconfigs; c++) {
        has_floor |= configs[c].is_floor;
    }

    /* The biggest size whose buffers fit the limit on every rank. */
    for (;;) {
        size_t need = cd->send_bytes(max_size, p, 0) + cd->recv_bytes(max_size, p, 0) +
                      (has_floor ? 2 * (size_t)floor_bytes(cd, max_size, p) : 0);
        if (need <= opt->mem_limit || max_size <= opt->min_size) {
            break;
        }
        max_size /= 2;
    }
    if (max_size < opt->max_size) {
        root_printf("# %s: sizes above %zu skipped: their buffers exceed -M %zu bytes\n", cd->name,
                    max_size, opt->mem_limit);
    }

    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (size_t s = opt->min_size; s <= max_size && nsizes < MAX_SIZES; s *= 2) {
        if (cd->count(s, p) > 0) {
            sizes[nsizes++] = s;
        }
    }
    if (0 == nsizes) {
        root_printf("# %s: no size in range holds one element per rank; nothing to run\n",
                    cd->name);
        return 0;
    }

    point_setup ps = {.cd = cd, .coll_index = coll_index};
    ps.args.rank = world_rank;
    ps.args.nprocs = p;
    size_t send_max = cd->send_bytes(max_size, p, world_rank);
    size_t recv_max = cd->recv_bytes(max_size, p, world_rank);
    size_t floor_max = has_floor ? (size_t)floor_bytes(cd, max_size, p) + 1 : 1;
    ps.args.sendbuf = alloc_touched(send_max);
    ps.args.recvbuf = alloc_touched(recv_max);
    ps.args.rcounts = calloc((size_t)p, sizeof(int));
    ps.args.displs = calloc((size_t)p, sizeof(int));
    long max_iters =
        opt->iterations > opt->iterations_large ? opt->iterations : opt->iterations_large;
    ps.samples = calloc((size_t)max_iters, sizeof(double));
    ps.floor_src = alloc_touched(floor_max);
    ps.floor_dst = alloc_touched(floor_max);
    int ok = NULL != ps.args.sendbuf && NULL != ps.args.recvbuf && NULL != ps.args.rcounts &&
             NULL != ps.args.displs && NULL != ps.floor_src && NULL != ps.floor_dst &&
             NULL != ps.samples;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, sync_comm);
    point_result *results = NULL;
    if (all_ok) {
        results =
            calloc((size_t)nsizes * (size_t)nconfigs * (size_t)opt->repeat, sizeof(point_result));
    }
    if (!all_ok || NULL == results) {
        root_printf("# %s: could not allocate buffers for sizes up to %zu (%zu + %zu bytes per "
                    "process); lower -m or -M\n",
                    cd->name, max_size, send_max, recv_max);
        *any_failure = 1;
        free(ps.args.sendbuf);
        free(ps.args.recvbuf);
        free(ps.args.rcounts);
        free(ps.args.displs);
        free(ps.floor_src);
        free(ps.floor_dst);
        free(ps.samples);
        return -1;
    }

    unsigned seed = 1;
    for (int si = 0; si < nsizes; si++) {
        size_t size = sizes[si];
        ps.args.size = size;
        ps.args.count = cd->count(size, p);
        if (0 == strcmp(cd->name, "reduce_scatter")) {
            int total = ps.args.count, offset = 0;
            for (int q = 0; q < p; q++) {
                ps.args.rcounts[q] = total / p + (q < total % p);
                ps.args.displs[q] = offset;
                offset += ps.args.rcounts[q];
            }
        }
        ps.floor_bytes = (size_t)floor_bytes(cd, size, p);
        /* Timed calls run on valid data (no NaN or denormal slow paths). */
        cd->fill(&ps.args, 0);
        long iters, warmup;
        iterations_for(opt, size, &iters, &warmup);
        for (int rep = 0; rep < opt->repeat; rep++) {
            /* Rotate who goes first so no configuration always inherits a
             * warm (or cold) cache from the same predecessor. */
            for (int k = 0; k < nconfigs; k++) {
                int c = (k + si + rep) % nconfigs;
                point_result r = measure_point(&ps, &configs[c], iters, warmup, seed++);
                results[((size_t)si * nconfigs + c) * opt->repeat + rep] = r;
                if (r.wrong != 0 && !configs[c].is_floor) {
                    *any_failure = 1;
                }
                if (NULL != csv) {
                    csv_row(csv, opt->tag, cd, &configs[c], size, rep, &r);
                }
            }
        }
    }

    for (int c = 0; c < nconfigs; c++) {
        print_table_header(cd, &configs[c]);
        for (int si = 0; si < nsizes; si++) {
            const point_result *reps = &results[((size_t)si * nconfigs + c) * opt->repeat];
            print_table_row(sizes[si], median_rep(reps, opt->repeat), &configs[c]);
        }
    }
    fflush(stdout);
    free(results);
    free(ps.args.sendbuf);
    free(ps.args.recvbuf);
    free(ps.args.rcounts);
    free(ps.args.displs);
    free(ps.floor_src);
    free(ps.floor_dst);
    free(ps.samples);
    return 0;
}

static int select_collectives(const char *list, int *selected)
{
    if (0 == strcmp(list, "all")) {
        for (int k = 0; k < NUM_COLLECTIVES; k++) {
            selected[k] = 1;
        }
        return 0;
    }
    char *copy = strdup(list);
    int rc = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok;
         tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < NUM_COLLECTIVES; k++) {
            if (0 == strcmp(tok, collectives[k].name)) {
                selected[k] = found = 1;
            }
        }
        if (!found) {
            root_printf("coll_latency: -c: unknown collective \"%s\"; known:", tok);
            for (int k = 0; k < NUM_COLLECTIVES; k++) {
                root_printf(" %s", collectives[k].name);
            }
            root_printf(" (or all)\n");
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

static void print_preamble(const bench_options *opt)
{
    root_printf("# coll_latency: %d processes, sizes %zu..%zu, iterations %ld/%ld, warm-up "
                "%ld/%ld (small/large), large budget %zu bytes, %d repetition(s)\n",
                world_size, opt->min_size, opt->max_size, opt->iterations, opt->iterations_large,
                opt->warmup, opt->warmup_large, opt->large_budget, opt->repeat);
    double depth = cvar_read_number("coll_bufpool_pipeline_depth");
    double segment = cvar_read_number("coll_bufpool_segment_size");
    if (depth > 0 && segment > 0) {
        root_printf("# bufpool scratch bound: pipeline_depth %.0f x segment_size %.0f = %.0f "
                    "bytes\n",
                    depth, segment, depth * segment);
    }
    root_printf("# Check: data verified after the timed loop.  MinFlt: minor page faults in the "
                "timed loop (all ranks).\n"
                "# RSSGrow: peak RSS growth in the timed loop (worst rank).  SysAllocs/NewRegs: "
                "pool slabs+direct\n"
                "# allocations and registrations in the timed loop (all ranks).  ScratchPeak: "
                "bufpool scratch\n"
                "# high-water since MPI_Init (worst rank).  Served: who handled the calls.\n"
                "# P50: each rank's median call time, averaged over ranks.\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    bench_options opt;
    int rc = parse_options(argc, argv, &opt);
    int selected[NUM_COLLECTIVES] = {0};
    if (0 == rc && 0 != select_collectives(opt.collectives, selected)) {
        rc = 2;
    }
    if (0 == rc && world_size < 2) {
        root_printf("coll_latency: needs at least 2 processes (mpirun -np 2 ...)\n");
        rc = 2;
    }
    if (0 != rc) {
        MPI_Finalize();
        return 1 == rc ? 0 : 2;
    }

    probes_open_all();
    /* The harness's own barriers and reductions stay off bufpool, so its
     * counters only count the measured calls. */
    MPI_Info sync_info;
    MPI_Info_create(&sync_info);
    MPI_Info_set(sync_info, COLL_PREFERENCE_KEY, "^bufpool");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, sync_info, &sync_comm);
    MPI_Info_free(&sync_info);
    bench_config configs[MAX_CONFIGS];
    int nconfigs = configs_create(opt.configs, opt.world_name, configs, MAX_CONFIGS);
    if (nconfigs <= 0) {
        if (0 == nconfigs) {
            root_printf("coll_latency: no configuration left to run\n");
        }
        MPI_Finalize();
        return 2;
    }

    FILE *csv = NULL;
    int csv_ok = 1;
    if (0 == world_rank && NULL != opt.csv_path) {
        csv = fopen(opt.csv_path, "a");
        if (NULL == csv) {
            fprintf(stderr, "coll_latency: -o %s: %s\n", opt.csv_path, strerror(errno));
            csv_ok = 0;
        } else if (0 == fseek(csv, 0, SEEK_END) && 0 == ftell(csv)) {
            csv_header(csv);
        }
    }
    MPI_Bcast(&csv_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!csv_ok) {
        MPI_Finalize();
        return 2;
    }

    print_preamble(&opt);
    int any_failure = 0;
    for (int k = 0; k < NUM_COLLECTIVES; k++) {
        if (selected[k]) {
            run_collective(&opt, k, configs, nconfigs, csv, &any_failure);
        }
    }
    if (any_failure) {
        root_printf("# DATA CHECK FAILED for at least one point (see the Check column)\n");
    }
    /* the runner tells a finished job from a crashed one by this line */
    root_printf("# coll_latency: done\n");

    if (NULL != csv) {
        fclose(csv);
    }
    for (int c = 0; c < nconfigs; c++) {
        if (MPI_COMM_NULL != configs[c].comm) {
            MPI_Comm_free(&configs[c].comm);
        }
    }
    MPI_Comm_free(&sync_comm);
    if (mpit_ready) {
        MPI_T_pvar_session_free(&probe_session);
        MPI_T_finalize();
    }
    MPI_Finalize();
    return any_failure ? 1 : 0;
}
