/*
 * rel_job: the MPI workloads of the reliability tests (test/reliability/).
 * Every collective result is checked by collcheck against a reference
 * computed serially in the test; pool memory from MPI_Alloc_mem is filled
 * and checked; at every idle point the pool's and bufpool's MPI_T counters
 * must show nothing out and bytes_held within the cap.
 *
 *   --rel-workload=mix      the fault-injection workload: phases "init"
 *                           (MPI_Init), "collective" (every collective at
 *                           small, segment-crossing and MiB sizes, pool
 *                           memory through MPI_Alloc_mem, a communicator
 *                           created and freed), "collection" (idle until
 *                           the pool collects, then the same again on
 *                           re-mapped slabs) and "final"
 *   --rel-workload=smoke    every collective at a small and a segment-crossing
 *                           size, and MPI_Alloc_mem: does a job compute right
 *   --rel-workload=comms    thousands of communicators created, used and
 *                           freed: pool, heap and RSS must not grow
 *   --rel-workload=threads  MPI_THREAD_MULTIPLE: threads run random checked
 *                           collectives (and MPI_Alloc_mem) on their own
 *                           communicators, in epochs separated by idle
 *                           points where the communicators are rebuilt; the
 *                           soak is this workload for ten minutes and more
 *
 * Options of this program (the others go to collcheck, see collcheck.h):
 *   --rel-comms=N          communicators of the comms workload (2000)
 *   --rel-heap-per-comm=B  heap growth allowed per communicator (256 bytes)
 *   --rel-threads=N        threads of the threads workload (8)
 *   --rel-vary-threads     each epoch runs 1 to N threads (a function of the
 *                          epoch, the same on every rank)
 *   --rel-epochs=N         epochs (3), or --rel-seconds=S: epochs until S
 *                          seconds have passed
 *   --rel-epoch-ops=N      collectives per thread and epoch (40)
 *   --rel-max-bytes=B      largest message (4M)
 *   --rel-max-held=B       bytes_held allowed at idle points (256M, the
 *                          default mpool_regpar_max_capacity)
 *   --rel-rss-slack=B      after warm-up, idle RSS outside the pool (RSS minus
 *                          bytes_held) and the heap in use may move by this
 *                          (16M)
 *   --rel-samples=FILE     rank 0 writes a sample of RSS and pool counters
 *                          every second (threads workload)
 *   --rel-idle=FILE        rank 0 writes every rank's idle-point figures
 *   --rel-gc-wait=MS       idle time of the mix workload's collection phase
 *                          (300; run with a shorter mpool_regpar_gc_age)
 *   --rel-expect-pool      fail if the pool's MPI_T variables are missing
 */
#define _GNU_SOURCE
#include "collcheck.h"
#include "faultinject.h"
#include "pvar_util.h"
#include "regpar_size.h"

#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

enum workload { WL_MIX, WL_SMOKE, WL_COMMS, WL_THREADS };

static struct {
    enum workload workload;
    long comms;
    long heap_per_comm;
    int threads;
    long epochs;
    double seconds;
    long epoch_ops;
    size_t max_bytes;
    unsigned long long max_held;
    long long rss_slack;
    const char *samples;
    const char *idle;
    long gc_wait_ms;
    bool expect_pool;
    bool vary_threads;
} opt = {
    .workload = WL_MIX,
    .comms = 2000,
    .heap_per_comm = 256,
    .threads = 8,
    .epochs = 3,
    .epoch_ops = 40,
    .max_bytes = 4 * MIB,
    .max_held = 256ull * MIB,
    .rss_slack = 16ll * (long long)MIB,
    .gc_wait_ms = 300,
};

static atomic_long steps_checked;

/* ------------------------------------------------------------------------ */
/* Options */

/* Byte counts and numbers alike: decimal, with an optional K, M, G or T
 * suffix (the components' strict parser). */
static bool parse_bytes(const char *text, unsigned long long *out)
{
    uint64_t v;
    if (0 != regpar_parse_size(text, &v, NULL, 0)) {
        return false;
    }
    *out = v;
    return true;
}

/* Takes our --rel-* options out of argv; false on a bad one. */
static bool parse_own_options(int *argc, char **argv)
{
    int kept = 1;
    bool ok = true;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i], *v;
        unsigned long long n = 0;
        if (0 != strncmp(a, "--rel-", 6)) {
            argv[kept++] = argv[i];
            continue;
        }
        if ((v = cc_option_value(a, "--rel-workload"))) {
            if (0 == strcmp(v, "mix")) {
                opt.workload = WL_MIX;
            } else if (0 == strcmp(v, "smoke")) {
                opt.workload = WL_SMOKE;
            } else if (0 == strcmp(v, "comms")) {
                opt.workload = WL_COMMS;
            } else if (0 == strcmp(v, "threads")) {
                opt.workload = WL_THREADS;
            } else {
                ok = false;
            }
        } else if ((v = cc_option_value(a, "--rel-comms")) && parse_bytes(v, &n) && n > 0) {
            opt.comms = (long)n;
        } else if ((v = cc_option_value(a, "--rel-heap-per-comm")) && parse_bytes(v, &n)) {
            opt.heap_per_comm = (long)n;
        } else if ((v = cc_option_value(a, "--rel-threads")) && parse_bytes(v, &n) && n > 0 &&
                   n <= 256) {
            opt.threads = (int)n;
        } else if ((v = cc_option_value(a, "--rel-epochs")) && parse_bytes(v, &n) && n > 0) {
            opt.epochs = (long)n;
        } else if ((v = cc_option_value(a, "--rel-seconds")) && parse_bytes(v, &n) && n > 0) {
            opt.seconds = (double)n;
        } else if ((v = cc_option_value(a, "--rel-epoch-ops")) && parse_bytes(v, &n) && n > 0) {
            opt.epoch_ops = (long)n;
        } else if ((v = cc_option_value(a, "--rel-max-bytes")) && parse_bytes(v, &n) && n > 0) {
            opt.max_bytes = (size_t)n;
        } else if ((v = cc_option_value(a, "--rel-max-held")) && parse_bytes(v, &n)) {
            opt.max_held = n;
        } else if ((v = cc_option_value(a, "--rel-rss-slack")) && parse_bytes(v, &n)) {
            opt.rss_slack = (long long)n;
        } else if ((v = cc_option_value(a, "--rel-samples"))) {
            opt.samples = v;
        } else if ((v = cc_option_value(a, "--rel-idle"))) {
            opt.idle = v;
        } else if ((v = cc_option_value(a, "--rel-gc-wait")) && parse_bytes(v, &n)) {
            opt.gc_wait_ms = (long)n;
        } else if (0 == strcmp(a, "--rel-expect-pool")) {
            opt.expect_pool = true;
        } else if (0 == strcmp(a, "--rel-vary-threads")) {
            opt.vary_threads = true;
        } else {
            fprintf(stderr, "rel_job: bad option '%s' (see the comment at the top of rel_job.c)\n",
                    a);
            ok = false;
        }
    }
    *argc = kept;
    argv[kept] = NULL;
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Process figures */

/* Resident bytes, in total and by kind ("RssAnon", "RssFile", "RssShmem" of
 * /proc/self/status): shared-memory transports make RssShmem grow as they
 * touch their segments, which is not a leak. */
typedef struct {
    long long total, anon, file, shmem;
} rss_figures;

static rss_figures rss_now(void)
{
    rss_figures r = {0, 0, 0, 0};
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f)) {
        long long kib;
        if (1 == sscanf(line, "VmRSS: %lld", &kib)) {
            r.total = kib * 1024;
        } else if (1 == sscanf(line, "RssAnon: %lld", &kib)) {
            r.anon = kib * 1024;
        } else if (1 == sscanf(line, "RssFile: %lld", &kib)) {
            r.file = kib * 1024;
        } else if (1 == sscanf(line, "RssShmem: %lld", &kib)) {
            r.shmem = kib * 1024;
        }
    }
    if (f) {
        fclose(f);
    }
    return r;
}

/* Bytes malloc has handed out and not got back: the leak detector. */
static long long heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
}

/* pvar_util is single-threaded; the sampler thread shares it. */
static pthread_mutex_t pvar_lock = PTHREAD_MUTEX_INITIALIZER;

static bool read_pvar(const char *name, unsigned long long *value)
{
    pthread_mutex_lock(&pvar_lock);
    enum pvar_status st = pvar_util_read(name, value);
    pthread_mutex_unlock(&pvar_lock);
    if (PVAR_OK != st && opt.expect_pool) {
        cc_fail(NULL, "MPI_T variable %s: %s", name, pvar_util_status_string(st));
    }
    return PVAR_OK == st;
}

typedef struct {
    double t;
    long long rss, anon, shmem, heap;
    unsigned long long held, in_use, scratch_in_use;
    long steps;
} idle_figures;

static double t_start;

/* At an idle point nothing may be out: every buffer of the pool and every
 * scratch buffer of bufpool is back, and the pool holds at most its cap. */
static idle_figures idle_check(const char *where)
{
    idle_figures f = {.t = MPI_Wtime() - t_start};
    /* Leaks are memory nobody freed; what glibc keeps after free() is not. */
    malloc_trim(0);
    rss_figures r = rss_now();
    f.rss = r.total;
    f.anon = r.anon;
    f.shmem = r.shmem;
    f.heap = heap_in_use();
    f.steps = atomic_load(&steps_checked);
    if (read_pvar("mpool_regpar_bytes_held", &f.held) && f.held > opt.max_held) {
        cc_fail(NULL, "%s: mpool_regpar_bytes_held %llu above the cap %llu while idle", where,
                f.held, opt.max_held);
    }
    if (read_pvar("mpool_regpar_bytes_in_use", &f.in_use) && f.in_use != 0) {
        cc_fail(NULL, "%s: mpool_regpar_bytes_in_use is %llu while idle (a buffer was not freed)",
                where, f.in_use);
    }
    if (read_pvar("coll_bufpool_scratch_bytes_in_use", &f.scratch_in_use) &&
        f.scratch_in_use != 0) {
        cc_fail(NULL, "%s: coll_bufpool_scratch_bytes_in_use is %llu while idle", where,
                f.scratch_in_use);
    }
    return f;
}

/* ------------------------------------------------------------------------ */
/* Checked steps */

/* Every collective, with built-in, derived, commutative and non-commutative
 * cases. */
static const cc_step_kind kinds[] = {
    {CC_ALLREDUCE, "MPI_INT", CC_OP_SUM},
    {CC_ALLREDUCE, "MPI_DOUBLE", CC_OP_MAX},
    {CC_ALLREDUCE, "vector3_uint32", CC_OP_USER_VEC3},
    {CC_REDUCE, "mat2x2_uint32", CC_OP_USER_MATMUL},
    {CC_REDUCE, "MPI_UINT64_T", CC_OP_BXOR},
    {CC_REDUCE_SCATTER, "MPI_DOUBLE", CC_OP_SUM},
    {CC_REDUCE_SCATTER_BLOCK, "MPI_UINT32_T", CC_OP_USER_PLUS1},
    {CC_SCAN, "MPI_2INT", CC_OP_MAXLOC},
    {CC_EXSCAN, "mat2x2_uint32", CC_OP_USER_MATMUL},
    {CC_BCAST, "MPI_BYTE", CC_OP_SUM},
    {CC_BCAST, "struct_i32_f64_i16", CC_OP_SUM},
    {CC_ALLGATHER, "MPI_INT", CC_OP_SUM},
    {CC_ALLTOALL, "MPI_DOUBLE", CC_OP_SUM},
    {CC_GATHER, "vector3_uint32", CC_OP_SUM},
    {CC_SCATTER, "MPI_BYTE", CC_OP_SUM},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Elements of a message of about `bytes`, so that collectives that move p
 * blocks stay within the budget as well. */
static size_t count_for(const cc_step_kind *k, const cc_comm *comm, size_t bytes)
{
    const cc_type *t = cc_type_by_name(k->type);
    bool per_block = k->coll == CC_REDUCE_SCATTER || k->coll == CC_ALLGATHER ||
                     k->coll == CC_ALLTOALL || k->coll == CC_GATHER || k->coll == CC_SCATTER ||
                     k->coll == CC_REDUCE_SCATTER_BLOCK;
    size_t n = bytes / t->extent;
    return per_block ? n / (size_t)comm->size : n;
}

static void run_step(const cc_comm *comm, const cc_step_kind *k, size_t count, int root,
                     bool in_place, uint64_t salt, int thread)
{
    if (!cc_coll_selected(k->coll)) {
        return;
    }
    cc_run_step(comm, k, count, root, in_place, salt, thread);
    atomic_fetch_add(&steps_checked, 1);
}

/* A pattern that differs per page and per byte: a page mapped twice or a
 * stale page shows. */
static void mem_fill(unsigned char *p, size_t bytes, uint64_t salt)
{
    for (size_t page = 0; page < bytes; page += 4096) {
        uint64_t h = cc_hash(salt, page);
        for (size_t i = page; i < bytes && i < page + 4096; i++) {
            p[i] = (unsigned char)(h + i);
        }
    }
}

static size_t mem_count_bad(const unsigned char *p, size_t bytes, uint64_t salt)
{
    size_t bad = 0;
    for (size_t page = 0; page < bytes; page += 4096) {
        uint64_t h = cc_hash(salt, page);
        for (size_t i = page; i < bytes && i < page + 4096; i++) {
            bad += p[i] != (unsigned char)(h + i);
        }
    }
    return bad;
}

/* Pool memory through MPI_Alloc_mem: written over its whole size and read
 * back.  A failure to allocate is an MPI error the caller sees (and the
 * job is still correct): it is reported, not fatal. */
static void alloc_mem_step(size_t bytes, uint64_t salt, int thread)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpool_hints", "mpool=regpar");
    unsigned char *p = NULL;
    int rc = MPI_Alloc_mem((MPI_Aint)bytes, info, &p);
    MPI_Info_free(&info);
    if (MPI_SUCCESS != rc || (bytes && !p)) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rel_job: MPI_Alloc_mem(%zu) returned error %d: %s\n", bytes, rc, msg);
        return;
    }
    mem_fill(p, bytes, salt);
    size_t bad = mem_count_bad(p, bytes, salt);
    if (bad) {
        cc_fail(NULL,
                "thread %d: %zu of %zu bytes of MPI_Alloc_mem memory did not hold their value",
                thread, bad, bytes);
    }
    MPI_Free_mem(p);
    atomic_fetch_add(&steps_checked, 1);
}

/* ------------------------------------------------------------------------ */
/* mix: the fault-injection workload */

/* Every kind at a small, a segment-crossing and (unless smoke) a MiB size. */
static void mix_collectives(const cc_comm *comm, uint64_t round, bool smoke)
{
    const size_t sizes[] = {7 * 8, cc_opts.segment_bytes + 8, MIB + 3 * KIB};
    for (size_t s = 0; s < (smoke ? 2 : sizeof(sizes) / sizeof(sizes[0])); s++) {
        for (size_t k = 0; k < NKINDS; k++) {
            size_t count = count_for(&kinds[k], comm, sizes[s]);
            uint64_t parts[] = {round, s, k};
            int root = (int)((round + s + k) % (uint64_t)comm->size);
            run_step(comm, &kinds[k], count, root, ((s + k) & 1) != 0, cc_case_salt(3, parts), -1);
        }
    }
}

/* Around the pool's boundaries: a page, a non-power of two, above the
 * largest bucket (a direct mapping). */
static void mix_alloc_mem(uint64_t round, bool smoke)
{
    const size_t mem_sizes[] = {4 * KIB, 100 * KIB, 3 * MIB, 65 * MIB};
    for (size_t s = 0; s < (smoke ? 2 : sizeof(mem_sizes) / sizeof(mem_sizes[0])); s++) {
        alloc_mem_step(mem_sizes[s], cc_hash(round, s), -1);
    }
}

/* Idle but progressing: the pool collects from Open MPI's progress loop. */
static void idle_with_progress(long ms)
{
    double until = MPI_Wtime() + (double)ms / 1000.0;
    int flag;
    while (MPI_Wtime() < until) {
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
}

/* Phases: every call of our components made in one of them happens inside
 * the MPI call the phase names (faultinject.h). */
static void workload_mix(void)
{
    cc_comm world, reversed;
    cc_comm_wrap(MPI_COMM_WORLD, "world", &world);

    faultinject_phase("collective");
    mix_collectives(&world, 1, false);
    cc_comm_create(CC_COMM_REVERSED, &reversed);
    mix_collectives(&reversed, 2, false);
    cc_comm_free(&reversed);
    idle_check("after the collective phase");

    faultinject_phase("alloc_mem");
    mix_alloc_mem(3, false);
    idle_check("after the MPI_Alloc_mem phase");

    /* Idle until the pool has collected its slabs, then collectives again on
     * slabs mapped after collection. */
    faultinject_phase("collection");
    unsigned long long collected0 = 0, collected = 0;
    read_pvar("mpool_regpar_bytes_collected", &collected0);
    idle_with_progress(opt.gc_wait_ms);
    read_pvar("mpool_regpar_bytes_collected", &collected);
    mix_collectives(&world, 4, false);
    idle_with_progress(opt.gc_wait_ms);
    idle_check("after the collection phase");

    faultinject_phase("final");
    if (cc_opts.verbose) {
        printf("rel_job mix: rank %d: %ld steps checked, %llu bytes collected while idle\n",
               cc_world_rank, atomic_load(&steps_checked), collected - collected0);
    }
}

/* A quick check that a job computes right (the bad-parameter sweep). */
static void workload_smoke(void)
{
    cc_comm world;
    cc_comm_wrap(MPI_COMM_WORLD, "world", &world);
    mix_collectives(&world, 5, true);
    mix_alloc_mem(6, true);
    idle_check("after the smoke workload");
}

/* ------------------------------------------------------------------------ */
/* comms: communicator churn */

static MPI_Comm churn_comm(long i)
{
    MPI_Comm c = MPI_COMM_NULL;
    switch (i % 4) {
        case 0:
            cc_comm_made(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
            break;
        case 1:
            cc_comm_made(MPI_Comm_split(MPI_COMM_WORLD, cc_world_rank % 2, cc_world_rank, &c),
                         "MPI_Comm_split");
            break;
        case 2:
            cc_comm_made(MPI_Comm_split(MPI_COMM_WORLD, 0, -cc_world_rank, &c), "MPI_Comm_split");
            break;
        default: {
            MPI_Group g;
            MPI_Comm_group(MPI_COMM_WORLD, &g);
            cc_comm_made(MPI_Comm_create(MPI_COMM_WORLD, g, &c), "MPI_Comm_create");
            MPI_Group_free(&g);
            break;
        }
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
}

static void workload_comms(void)
{
    const long warm = opt.comms / 10 > 0 ? opt.comms / 10 : 1;
    idle_figures at_warm = {0}, at_end;
    /* Slabs alive (mapped - released): collection may remap slabs between
     * communicators, which is churn, not growth. */
    unsigned long long mapped_warm = 0, released_warm = 0, mapped_end = 0, released_end = 0;
    for (long i = 0; i < opt.comms; i++) {
        if (i == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            at_warm = idle_check("after warm-up");
            read_pvar("mpool_regpar_slabs_mapped", &mapped_warm);
            read_pvar("mpool_regpar_slabs_released", &released_warm);
        }
        MPI_Comm c = churn_comm(i);
        cc_comm comm;
        cc_comm_wrap(c, "churn", &comm);
        /* A small allreduce on every one; a segment-crossing bcast, which
         * takes pool scratch, on every eighth. */
        run_step(&comm, &kinds[0], 7, 0, false, cc_hash(0xc0aa, (uint64_t)i), -1);
        if (0 == i % 8) {
            run_step(&comm, &kinds[9], cc_opts.segment_bytes * 2 + 1,
                     (int)(i / 8 % (long)comm.size), false, cc_hash(0xc0ab, (uint64_t)i), -1);
        }
        MPI_Comm_free(&c);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    at_end = idle_check("after the last communicator");
    read_pvar("mpool_regpar_slabs_mapped", &mapped_end);
    read_pvar("mpool_regpar_slabs_released", &released_end);
    long long live_growth =
        (long long)(mapped_end - released_end) - (long long)(mapped_warm - released_warm);

    const long measured = opt.comms - warm;
    long long heap_growth = at_end.heap - at_warm.heap;
    long long rss_growth = at_end.rss - at_warm.rss;
    if (heap_growth > opt.heap_per_comm * measured) {
        cc_fail(NULL,
                "heap in use grew by %lld bytes over %ld communicators (%.1f per communicator, "
                "allowed %ld): per-communicator state is leaking",
                heap_growth, measured, (double)heap_growth / (double)measured, opt.heap_per_comm);
    }
    if (at_end.held > at_warm.held) {
        cc_fail(NULL, "the pool holds %llu bytes after the churn, %llu after warm-up", at_end.held,
                at_warm.held);
    }
    if (live_growth > 0) {
        cc_fail(NULL, "the pool holds %lld more slabs after the churn than after warm-up",
                live_growth);
    }
    printf("rel_job comms: rank %d: %ld communicators; after warm-up (%ld): heap %+lld bytes "
           "(%.1f per communicator), RSS %+lld KiB, pool held %llu -> %llu, slabs alive %+lld\n",
           cc_world_rank, opt.comms, warm, heap_growth, (double)heap_growth / (double)measured,
           rss_growth / 1024, at_warm.held, at_end.held, live_growth);
}

/* ------------------------------------------------------------------------ */
/* threads: MPI_THREAD_MULTIPLE, epochs, soak */

typedef struct {
    int id;
    long epoch;
    cc_comm comm;
    pthread_t thread;
} worker;

/* A message size: mostly small and around a segment, sometimes MiBs. */
static size_t random_bytes(uint64_t r)
{
    const size_t seg = cc_opts.segment_bytes;
    switch (r % 8) {
        case 0:
            return 0;
        case 1:
            return 8 + (r >> 8) % 64;
        case 2:
            return 1001 * 8;
        case 3:
            return seg - 8;
        case 4:
            return seg + 8;
        case 5:
            return 4 * seg + (r >> 8) % seg;
        default:
            return (r >> 8) % opt.max_bytes;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (long op = 0; op < opt.epoch_ops; op++) {
        /* The same draw on every rank of the communicator. */
        uint64_t r = cc_hash(cc_hash((uint64_t)w->epoch, (uint64_t)w->id), (uint64_t)op);
        const cc_step_kind *k = &kinds[r % NKINDS];
        uint64_t r2 = cc_hash(r, 1);
        size_t count = count_for(k, &w->comm, random_bytes(r2));
        int root = (int)((r2 >> 32) % (uint64_t)w->comm.size);
        run_step(&w->comm, k, count, root, (r2 >> 16) & 1, cc_hash(r, 2), w->id);
        if (0 == op % 4) {
            /* Local: any size, any rank. */
            uint64_t m = cc_hash(r, (uint64_t)cc_world_rank + 3);
            alloc_mem_step((size_t)(m % (8 * MIB)) + 1, m, w->id);
        }
    }
    return NULL;
}

/* Communicators of an epoch: the shape changes with the epoch so that
 * modules are created and destroyed while other threads run. */
static void make_worker_comm(worker *w)
{
    switch ((w->epoch + w->id) % 3) {
        case 0:
            cc_comm_create(CC_COMM_DUP, &w->comm);
            break;
        case 1:
            cc_comm_create(CC_COMM_REVERSED, &w->comm);
            break;
        default:
            cc_comm_create(CC_COMM_HALVES, &w->comm);
            break;
    }
}

static atomic_bool sampler_stop;

static void *sampler_main(void *arg)
{
    FILE *f = arg;
    fprintf(f, "seconds,rss_bytes,rss_anon_bytes,held_bytes,pool_in_use_bytes,"
               "scratch_in_use_bytes,steps\n");
    while (!atomic_load(&sampler_stop)) {
        unsigned long long held = 0, in_use = 0, scratch = 0;
        read_pvar("mpool_regpar_bytes_held", &held);
        read_pvar("mpool_regpar_bytes_in_use", &in_use);
        read_pvar("coll_bufpool_scratch_bytes_in_use", &scratch);
        rss_figures r = rss_now();
        fprintf(f, "%.2f,%lld,%lld,%llu,%llu,%llu,%ld\n", MPI_Wtime() - t_start, r.total, r.anon,
                held, in_use, scratch, atomic_load(&steps_checked));
        fflush(f);
        for (int i = 0; i < 10 && !atomic_load(&sampler_stop); i++) {
            usleep(100000);
        }
    }
    return NULL;
}

/* Rank 0 gathers every rank's idle figures by point-to-point messages (they
 * must not depend on the collectives under test). */
static void gather_idle(const idle_figures *mine, idle_figures *all)
{
    if (0 == cc_world_rank) {
        all[0] = *mine;
        for (int r = 1; r < cc_world_size; r++) {
            MPI_Recv(&all[r], (int)sizeof(idle_figures), MPI_BYTE, r, 7010, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        }
    } else {
        MPI_Send(mine, (int)sizeof(idle_figures), MPI_BYTE, 0, 7010, MPI_COMM_WORLD);
    }
}

static void workload_threads(void)
{
    faultinject_phase("threads");
    worker *workers = cc_xmalloc(sizeof(worker) * (size_t)opt.threads);
    FILE *samples = NULL, *idle = NULL;
    pthread_t sampler;
    if (0 == cc_world_rank && opt.samples && !(samples = fopen(opt.samples, "w"))) {
        cc_fail(NULL, "cannot write %s", opt.samples);
    }
    if (0 == cc_world_rank && opt.idle && (idle = fopen(opt.idle, "w"))) {
        fprintf(idle, "seconds,epoch,rank,rss_bytes,rss_anon_bytes,rss_shmem_bytes,heap_bytes,"
                      "held_bytes,steps\n");
    }
    if (samples) {
        pthread_create(&sampler, NULL, sampler_main, samples);
    }
    /* Per rank after warm-up (rank 0 keeps them): the range of idle private
     * RSS outside the pool (RssAnon minus bytes_held: the pool's slabs are
     * bounded by the cap and move with collection; shared-memory segments of
     * the transports are not private) and of the heap in use. */
    long long *rest_min = cc_xmalloc(sizeof(long long) * (size_t)cc_world_size);
    long long *rest_max = cc_xmalloc(sizeof(long long) * (size_t)cc_world_size);
    long long *heap_min = cc_xmalloc(sizeof(long long) * (size_t)cc_world_size);
    long long *heap_max = cc_xmalloc(sizeof(long long) * (size_t)cc_world_size);
    idle_figures *all = cc_xmalloc(sizeof(idle_figures) * (size_t)cc_world_size);
    long warm_epochs = -1;
    int go = 1;
    for (long epoch = 0; go; epoch++) {
        /* The same on every rank: a function of the epoch. */
        const int n = opt.vary_threads
                          ? 1 + (int)(cc_hash(0x7ead, (uint64_t)epoch) % (uint64_t)opt.threads)
                          : opt.threads;
        for (int i = 0; i < n; i++) {
            workers[i].id = i;
            workers[i].epoch = epoch;
            make_worker_comm(&workers[i]);
        }
        for (int i = 0; i < n; i++) {
            if (0 != pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
                fprintf(stderr, "rel_job: pthread_create failed\n");
                MPI_Abort(MPI_COMM_WORLD, 6);
            }
        }
        for (int i = 0; i < n; i++) {
            pthread_join(workers[i].thread, NULL);
        }
        for (int i = 0; i < n; i++) {
            cc_comm_free(&workers[i].comm);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        idle_figures mine = idle_check("between epochs");
        gather_idle(&mine, all);
        if (0 == cc_world_rank) {
            double elapsed = MPI_Wtime() - t_start;
            /* Warm-up: the first quarter of the run (the pool, Open MPI's
             * free lists and glibc's arenas reach their working size). */
            bool warm = opt.seconds > 0 ? elapsed >= opt.seconds / 4 : epoch >= opt.epochs / 4;
            if (warm && warm_epochs < 0) {
                warm_epochs = epoch;
                for (int r = 0; r < cc_world_size; r++) {
                    rest_min[r] = rest_max[r] = all[r].anon - (long long)all[r].held;
                    heap_min[r] = heap_max[r] = all[r].heap;
                }
            }
            for (int r = 0; r < cc_world_size && warm_epochs >= 0; r++) {
                long long rest = all[r].anon - (long long)all[r].held;
                rest_min[r] = rest < rest_min[r] ? rest : rest_min[r];
                rest_max[r] = rest > rest_max[r] ? rest : rest_max[r];
                heap_min[r] = all[r].heap < heap_min[r] ? all[r].heap : heap_min[r];
                heap_max[r] = all[r].heap > heap_max[r] ? all[r].heap : heap_max[r];
            }
            for (int r = 0; r < cc_world_size && idle; r++) {
                fprintf(idle, "%.2f,%ld,%d,%lld,%lld,%lld,%lld,%llu,%ld\n", all[r].t, epoch, r,
                        all[r].rss, all[r].anon, all[r].shmem, all[r].heap, all[r].held,
                        all[r].steps);
            }
            if (idle) {
                fflush(idle);
            }
            go = opt.seconds > 0 ? elapsed < opt.seconds : epoch + 1 < opt.epochs;
            if (cc_opts.verbose) {
                printf("epoch %ld: %.0f s, %ld steps on rank 0, RSS %lld KiB (anon %lld, shmem "
                       "%lld), heap %lld KiB, pool held %llu KiB\n",
                       epoch, elapsed, all[0].steps, all[0].rss / 1024, all[0].anon / 1024,
                       all[0].shmem / 1024, all[0].heap / 1024, all[0].held / 1024);
            }
        }
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (samples) {
        atomic_store(&sampler_stop, true);
        pthread_join(sampler, NULL);
        fclose(samples);
    }
    if (idle) {
        fclose(idle);
    }
    if (0 == cc_world_rank) {
        for (int r = 0; r < cc_world_size && warm_epochs >= 0; r++) {
            long long moved = rest_max[r] - rest_min[r];
            printf("rel_job threads: rank %d after warm-up, at idle points: private RSS outside "
                   "the pool "
                   "%lld..%lld KiB (moved %lld KiB, allowed %lld), heap in use %lld..%lld KiB\n",
                   r, rest_min[r] / 1024, rest_max[r] / 1024, moved / 1024, opt.rss_slack / 1024,
                   heap_min[r] / 1024, heap_max[r] / 1024);
            if (moved > opt.rss_slack) {
                cc_fail(
                    NULL,
                    "rank %d: idle private RSS outside the pool moved by %lld KiB after warm-up "
                    "(allowed %lld)",
                    r, moved / 1024, opt.rss_slack / 1024);
            }
            if (heap_max[r] - heap_min[r] > opt.rss_slack) {
                cc_fail(NULL, "rank %d: heap in use moved by %lld KiB after warm-up (allowed %lld)",
                        r, (heap_max[r] - heap_min[r]) / 1024, opt.rss_slack / 1024);
            }
        }
    }
    long steps = atomic_load(&steps_checked), total = steps;
    MPI_Reduce(&steps, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == cc_world_rank) {
        printf("rel_job threads: %s%d threads x %d ranks, %.0f s, %ld checked steps in total\n",
               opt.vary_threads ? "1 to " : "", opt.threads, cc_world_size, MPI_Wtime() - t_start,
               total);
    }
    free(all);
    free(rest_min);
    free(rest_max);
    free(heap_min);
    free(heap_max);
    free(workers);
}

int main(int argc, char **argv)
{
    bool ok = parse_own_options(&argc, argv);
    int level = WL_THREADS == opt.workload ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    if (cc_init(&argc, &argv, level, NULL)) {
        t_start = MPI_Wtime();
        if (!ok) {
            cc_fail(NULL, "bad command line");
        } else {
            pthread_mutex_lock(&pvar_lock);
            pvar_util_init();
            pthread_mutex_unlock(&pvar_lock);
            switch (opt.workload) {
                case WL_MIX:
                    workload_mix();
                    break;
                case WL_SMOKE:
                    workload_smoke();
                    break;
                case WL_COMMS:
                    workload_comms();
                    break;
                default:
                    workload_threads();
                    break;
            }
        }
    }
    return cc_finish("rel_job");
}
