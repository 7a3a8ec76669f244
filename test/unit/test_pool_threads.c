/*
 * Multi-thread stress: 8 workers allocate, tag, verify and free buffers of
 * mixed sizes while a collector thread keeps forcing collections (the race
 * between collecting a wholly free slab and handing out its buffers) and the
 * cap keeps releasing slabs.  A buffer handed out twice or lost shows as a
 * wrong tag or wrong final counters.
 * REGPAR_STRESS_OPS sets the total alloc+free pairs (default 2,000,000).
 */
#include <pthread.h>
#include <time.h>

#include "test_pool_common.h"

#define NTHREADS        8
#define LIVE_PER_THREAD 8

typedef struct worker {
    pthread_t thread;
    regpar_pool_t *pool;
    unsigned id;
    long pairs;
    uint64_t allocs, frees, errors;
} worker_t;

static atomic_bool stop_collector;
static pthread_barrier_t start_barrier;

/* The tag of word k (one per page, plus the last word) of a buffer. */
static uint64_t tag(unsigned id, uint64_t seq, size_t k)
{
    return ((uint64_t)id << 56) ^ (seq << 20) ^ k;
}

/* Tag the first word of every page and the last word (page words that
 * would overlap the last one are left out). */
static void tag_buffer(char *p, size_t size, unsigned id, uint64_t seq)
{
    size_t page = 4096, k = 0;
    for (size_t off = 0; off + 16 <= size; off += page, k++) {
        *(uint64_t *)(p + off) = tag(id, seq, k);
    }
    uint64_t last = tag(id, seq, SIZE_MAX);
    memcpy(p + size - 8, &last, 8); /* size need not be a multiple of 8 */
}

static bool check_buffer(const char *p, size_t size, unsigned id, uint64_t seq)
{
    size_t page = 4096, k = 0;
    for (size_t off = 0; off + 16 <= size; off += page, k++) {
        if (*(const uint64_t *)(p + off) != tag(id, seq, k)) {
            return false;
        }
    }
    uint64_t last;
    memcpy(&last, p + size - 8, 8);
    return last == tag(id, seq, SIZE_MAX);
}

static size_t worker_size(uint64_t *rng)
{
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    unsigned r = (unsigned)(*rng % 1000);
    size_t x = (size_t)(*rng >> 20);
    if (r < 800) {
        return 1 + x % (16 << 10);
    }
    if (r < 995) {
        return 1 + x % (256 << 10);
    }
    return (256 << 10) + 1 + x % (256 << 10); /* direct */
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    struct {
        char *p;
        size_t size;
        uint64_t seq;
    } live[LIVE_PER_THREAD] = {{0}};
    uint64_t rng = 0x9E3779B97F4A7C15ULL * (w->id + 1), seq = 0;
    pthread_barrier_wait(&start_barrier);
    for (long i = 0; i < w->pairs + LIVE_PER_THREAD; i++) {
        unsigned slot = (unsigned)(i % LIVE_PER_THREAD);
        if (live[slot].p) {
            if (!check_buffer(live[slot].p, live[slot].size, w->id, live[slot].seq)) {
                w->errors++;
            }
            if (0 != regpar_pool_free(w->pool, live[slot].p)) {
                w->errors++;
            }
            w->frees++;
            live[slot].p = NULL;
        }
        if (i >= w->pairs) {
            continue;
        }
        size_t size = worker_size(&rng);
        char *p = regpar_pool_alloc(w->pool, size);
        if (!p) {
            w->errors++;
            continue;
        }
        w->allocs++;
        live[slot].p = p;
        live[slot].size = size < 8 ? 8 : size;
        live[slot].seq = ++seq;
        tag_buffer(p, live[slot].size, w->id, seq);
    }
    return NULL;
}

static void *collector_main(void *arg)
{
    regpar_pool_t *pool = arg;
    struct timespec pause = {0, 50000};
    for (unsigned n = 0; !atomic_load(&stop_collector); n++) {
        /* Forcing often would make every allocation a miss. */
        regpar_pool_collect(pool, n % 16 == 0);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void test_stress(long pairs)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    test_log_reset(&log);
    test_pool_config(&cfg, &log, NULL);
    cfg.bucket_max = (size_t)256 << 10;
    cfg.slab_size = (size_t)4 << 20;
    cfg.max_capacity = (size_t)16 << 20;
    cfg.gc_age_ns = 2000000; /* 2 ms: the amortised path collects too */
    regpar_pool_t *pool = test_pool_create(&cfg);

    worker_t w[NTHREADS];
    pthread_t collector;
    pthread_barrier_init(&start_barrier, NULL, NTHREADS);
    atomic_store(&stop_collector, false);
    UNIT_REQUIRE(0 == pthread_create(&collector, NULL, collector_main, pool));
    for (unsigned i = 0; i < NTHREADS; i++) {
        w[i] = (worker_t){.pool = pool, .id = i, .pairs = pairs / NTHREADS};
        UNIT_REQUIRE(0 == pthread_create(&w[i].thread, NULL, worker_main, &w[i]));
    }
    uint64_t allocs = 0, frees = 0, errors = 0;
    for (unsigned i = 0; i < NTHREADS; i++) {
        pthread_join(w[i].thread, NULL);
        allocs += w[i].allocs;
        frees += w[i].frees;
        errors += w[i].errors;
    }
    atomic_store(&stop_collector, true);
    pthread_join(collector, NULL);
    pthread_barrier_destroy(&start_barrier);

    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(errors, 0);
    UNIT_CHECK_EQ_U64(allocs, (uint64_t)(pairs / NTHREADS) * NTHREADS);
    UNIT_CHECK_EQ_U64(st.allocs, allocs);
    UNIT_CHECK_EQ_U64(st.frees, frees);
    UNIT_CHECK_EQ_U64(st.allocs, st.frees);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
    UNIT_CHECK_EQ_U64(st.allocs, st.hits + st.misses + st.direct_allocs);
    UNIT_CHECK_EQ_U64(st.alloc_failures, 0);
    UNIT_CHECK(st.bytes_held <= cfg.max_capacity);
    UNIT_CHECK(st.direct_allocs > 0 && st.misses > 0 && st.bytes_collected > 0);
    UNIT_CHECK_EQ_U64(log.count[0] + log.count[1], 0);
    regpar_pool_collect(pool, true);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, st.slabs_released);
    printf("stress: %" PRIu64 " allocs over %d threads: %" PRIu64 " hits, %" PRIu64
           " misses, %" PRIu64 " direct, %" PRIu64 " slabs mapped, %" PRIu64
           " over capacity, %" PRIu64 " bytes collected\n",
           st.allocs, NTHREADS, st.hits, st.misses, st.direct_allocs, st.slabs_mapped,
           st.over_capacity, st.bytes_collected);
    regpar_pool_destroy(pool);
}

/* All threads miss on the same cold bucket at once: they share the slab
 * being created instead of each mapping one, and get distinct buffers. */
typedef struct cold {
    regpar_pool_t *pool;
    void *got[64];
} cold_t;

static void *cold_main(void *arg)
{
    cold_t *c = arg;
    pthread_barrier_wait(&start_barrier);
    for (int i = 0; i < 64; i++) {
        c->got[i] = regpar_pool_alloc(c->pool, 4096);
    }
    return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

static void test_cold_start(void)
{
    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, NULL);
    regpar_pool_t *pool = test_pool_create(&cfg);
    static cold_t c[NTHREADS];
    pthread_t t[NTHREADS];
    pthread_barrier_init(&start_barrier, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        c[i].pool = pool;
        UNIT_REQUIRE(0 == pthread_create(&t[i], NULL, cold_main, &c[i]));
    }
    static void *all[NTHREADS * 64];
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        memcpy(all + 64 * i, c[i].got, sizeof(c[i].got));
    }
    pthread_barrier_destroy(&start_barrier);
    qsort(all, NTHREADS * 64, sizeof(all[0]), cmp_ptr);
    for (int i = 0; i < NTHREADS * 64; i++) {
        UNIT_REQUIRE(all[i]);
        UNIT_CHECK(i == 0 || all[i] != all[i - 1]);
    }
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    /* 512 buffers of 4K fit the first 2M slab: with waiting, at most one
     * slab per thread even in the worst interleaving. */
    UNIT_CHECK(st.misses >= 1 && st.misses <= NTHREADS);
    printf("cold start: %d threads, %" PRIu64 " slab(s) mapped\n", NTHREADS, st.slabs_mapped);
    for (int i = 0; i < NTHREADS * 64; i++) {
        UNIT_CHECK(0 == regpar_pool_free(pool, all[i]));
    }
    test_check_consistent(pool);
    regpar_pool_destroy(pool);
}

int main(void)
{
    const char *env = getenv("REGPAR_STRESS_OPS");
    long pairs = env ? atol(env) : 2000000;
    test_cold_start();
    test_stress(pairs);
    return unit_finish("test_pool_threads");
}
