/*
 * Allocation cost of the regpar pool against glibc malloc/free, for
 * page-multiple sizes from 4 KiB to 64 MiB, with 1 and 2 threads, in three
 * variants:
 *   a  alloc + free
 *   b  alloc + touch one byte per page + free (the page-fault cost a
 *      collective pays on a fresh scratch buffer)
 *   c  alloc + memset of the whole buffer + free (memory bandwidth is the
 *      same for both, so the ratio shrinks)
 * glibc is measured twice: with its default dynamic mmap threshold (after a
 * large block is freed, blocks up to 32 MiB come from the heap and are
 * reused warm) and, in a forked process with a pristine heap, with the
 * threshold pinned at 128 KiB (mallopt): every block above it is a fresh
 * mmap, which is how glibc serves a size it has not seen freed yet, and any
 * block above 32 MiB.
 *
 * Prints ns per operation (per thread, best of 3 runs) and malloc/pool
 * ratios.  Never fails on time.  Usage: bench_pool_alloc [ms per cell,
 * default 100]
 */
#include "bufpool_config.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "regpar_pool.h"

#define NSIZES      15 /* 4K << 0 .. 4K << 14 = 64M */
#define MAX_THREADS 2
#define NVARIANTS   3
#define ROUNDS      3

enum allocator { USE_POOL, USE_MALLOC, USE_MALLOC_FIXED, NALLOCATORS };

static const char *const variant_names[NVARIANTS] = {"a: alloc + free",
                                                     "b: alloc + touch one byte per page + free",
                                                     "c: alloc + memset whole buffer + free"};

typedef struct cell {
    regpar_pool_t *pool;
    enum allocator allocator;
    int variant;
    size_t size;
    uint64_t budget_ns;
    pthread_barrier_t *barrier;
    double ns_per_op; /* out */
} cell_t;

static void *volatile sink;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void one_op(const cell_t *c, unsigned long iter)
{
    char *p = USE_POOL == c->allocator ? regpar_pool_alloc(c->pool, c->size) : malloc(c->size);
    if (!p) {
        fprintf(stderr, "allocation of %zu bytes failed\n", c->size);
        exit(1);
    }
    if (1 == c->variant) {
        for (size_t off = 0; off < c->size; off += 4096) {
            p[off] = (char)iter;
        }
    } else if (2 == c->variant) {
        memset(p, (int)iter, c->size);
    }
    sink = p;
    if (USE_POOL == c->allocator) {
        regpar_pool_free(c->pool, p);
    } else {
        free(p);
    }
}

static void *cell_thread(void *arg)
{
    cell_t *c = arg;
    for (unsigned long i = 0; i < 2; i++) { /* warm up: map the slab, settle glibc */
        one_op(c, i);
    }
    pthread_barrier_wait(c->barrier);
    unsigned long iters = 0, batch = 1;
    uint64_t start = now_ns(), elapsed;
    do {
        for (unsigned long i = 0; i < batch; i++) {
            one_op(c, iters + i);
        }
        iters += batch;
        elapsed = now_ns() - start;
        if (batch < 4096 && elapsed < c->budget_ns / 16) {
            batch *= 2;
        }
    } while (elapsed < c->budget_ns);
    c->ns_per_op = (double)elapsed / (double)iters;
    return NULL;
}

/* Mean ns per operation over nthreads threads running at once. */
static double measure(regpar_pool_t *pool, enum allocator allocator, int variant, size_t size,
                      int nthreads, uint64_t budget_ns)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
    cell_t cells[MAX_THREADS];
    pthread_t threads[MAX_THREADS];
    for (int t = 0; t < nthreads; t++) {
        cells[t] = (cell_t){pool, allocator, variant, size, budget_ns, &barrier, 0};
        if (0 != pthread_create(&threads[t], NULL, cell_thread, &cells[t])) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    }
    double sum = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(threads[t], NULL);
        sum += cells[t].ns_per_op;
    }
    pthread_barrier_destroy(&barrier);
    return sum / nthreads;
}

typedef double results_t[MAX_THREADS][NVARIANTS][NSIZES][NALLOCATORS];

/*
 * Fill the columns first..last of every cell.  Other processes share the
 * machine: each cell alternates the allocators in ROUNDS short runs and
 * keeps each one's best, so that a burst of load does not land on one
 * column only.
 */
static void measure_all(regpar_pool_t *pool, results_t *res, int first, int last,
                        uint64_t budget_ns)
{
    for (int t = 1; t <= MAX_THREADS; t++) {
        for (int v = 0; v < NVARIANTS; v++) {
            for (int s = 0; s < NSIZES; s++) {
                double *cell = (*res)[t - 1][v][s];
                for (int r = 0; r < ROUNDS; r++) {
                    for (int a = first; a <= last; a++) {
                        double x = measure(pool, (enum allocator)a, v, (size_t)4096 << s, t,
                                           budget_ns / ROUNDS);
                        cell[a] = 0 == r || x < cell[a] ? x : cell[a];
                    }
                }
            }
        }
    }
}

static void print_ns(double ns)
{
    if (ns < 10000) {
        printf(" %11.1f", ns);
    } else {
        printf(" %11.0f", ns);
    }
}

int main(int argc, char **argv)
{
    uint64_t budget_ns = (argc > 1 ? strtoull(argv[1], NULL, 10) : 100) * 1000000ULL;
    if (!budget_ns) {
        fprintf(stderr, "usage: %s [milliseconds per measurement, default 100]\n", argv[0]);
        return 2;
    }
    /* Results are shared with a child process: see measure_all. */
    results_t *ns =
        mmap(NULL, sizeof(*ns), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == (void *)ns) {
        perror("mmap");
        return 1;
    }
    /* glibc only honours a lowered mmap threshold in a heap that has not
     * grown yet (otherwise the top chunk serves the request warm), hence a
     * fresh process forked before any large allocation. */
    fflush(stdout);
    pid_t child = fork();
    if (0 == child) {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        measure_all(NULL, ns, USE_MALLOC_FIXED, USE_MALLOC_FIXED, budget_ns);
        _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        0 != WEXITSTATUS(status)) {
        fprintf(stderr, "the fixed-threshold malloc run failed\n");
        return 1;
    }

    regpar_pool_config_t cfg;
    regpar_pool_config_defaults(&cfg); /* bucket_max 64M, slab_size 32M */
    cfg.max_capacity = (size_t)4 << 30;
    regpar_pool_t *pool = NULL;
    char err[256];
    if (0 != regpar_pool_create(&cfg, &pool, err, sizeof(err))) {
        fprintf(stderr, "pool: %s\n", err);
        return 1;
    }
    measure_all(pool, ns, USE_POOL, USE_MALLOC, budget_ns);

    printf("regpar pool vs glibc malloc: ns per alloc+free (per thread), %llu ms per cell\n",
           (unsigned long long)(budget_ns / 1000000));
    printf("pool: bucket 4K..64M x2, slab_size 32M, hugepages on, no registration engine\n");
    printf("malloc: glibc default (dynamic mmap threshold); malloc128K: M_MMAP_THRESHOLD=128K\n");
    for (int t = 1; t <= MAX_THREADS; t++) {
        for (int v = 0; v < NVARIANTS; v++) {
            printf("\n%d thread(s), %s\n", t, variant_names[v]);
            printf("%8s %11s %11s %9s %11s %9s\n", "size", "pool", "malloc", "ratio", "malloc128K",
                   "ratio");
            for (int s = 0; s < NSIZES; s++) {
                char size[16];
                size_t bytes = (size_t)4096 << s;
                snprintf(size, sizeof(size), bytes >= (1 << 20) ? "%zuM" : "%zuK",
                         bytes >= (1 << 20) ? bytes >> 20 : bytes >> 10);
                const double *r = (*ns)[t - 1][v][s];
                printf("%8s", size);
                print_ns(r[USE_POOL]);
                print_ns(r[USE_MALLOC]);
                printf(" %8.2fx", r[USE_MALLOC] / r[USE_POOL]);
                print_ns(r[USE_MALLOC_FIXED]);
                printf(" %8.2fx\n", r[USE_MALLOC_FIXED] / r[USE_POOL]);
            }
        }
    }
    char report[8192];
    regpar_pool_report(pool, report, sizeof(report));
    printf("\npool after the run:\n%s", report);
    regpar_pool_destroy(pool);
    munmap(ns, sizeof(*ns));
    return 0;
}
