/*
 * The registration engine's thread pool.  See regpar_workers.h.
 */
#include "bufpool_config.h"

#include "regpar_workers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif

typedef struct regpar_job {
    regpar_task_fn fn;
    void *arg;
    size_t ntasks;
    int *status;
    bool stop_on_error;
    atomic_size_t next; /* next task index to hand out */
    atomic_bool failed;
} regpar_job_t;

typedef struct regpar_worker {
    regpar_workers_t *pool;
    unsigned id; /* 0-based among the workers (the caller is not one) */
} regpar_worker_t;

struct regpar_workers {
    unsigned nthreads; /* caller included */
    unsigned nstarted; /* workers actually running */
    pthread_t *threads;
    regpar_worker_t *workers;
    /* Held by the caller whose job is running; others find it taken and run
     * their job alone. */
    pthread_mutex_t busy;
    pthread_mutex_t lock; /* protects everything below */
    pthread_cond_t wake;
    pthread_cond_t done;
    unsigned long generation; /* bumped for every job and for shutdown */
    unsigned participants;    /* workers with id below this take part */
    unsigned pending;         /* participants not finished yet */
    regpar_job_t *job;
    bool shutdown;
    bool bind;
    /* A forked child has none of the workers: it must run its jobs alone
     * rather than wait for threads that do not exist. */
    pid_t owner;
#ifdef HAVE_HWLOC
    hwloc_topology_t topology;
    bool have_topology;
#endif
};

static void run_tasks(regpar_job_t *job)
{
    for (;;) {
        size_t index = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (index >= job->ntasks) {
            return;
        }
        if (job->stop_on_error && atomic_load_explicit(&job->failed, memory_order_relaxed)) {
            job->status[index] = REGPAR_TASK_SKIPPED;
            continue;
        }
        int rc = job->fn(job->arg, index);
        job->status[index] = rc;
        if (0 != rc) {
            atomic_store_explicit(&job->failed, true, memory_order_relaxed);
        }
    }
}

unsigned regpar_workers_online_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (0 == sched_getaffinity(0, sizeof(set), &set)) {
        int count = CPU_COUNT(&set);
        if (count > 0) {
            return (unsigned)count;
        }
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (unsigned)online : 1;
}

/* Best effort: an unbound worker still does its work. */
static void bind_worker(regpar_workers_t *pool, unsigned id)
{
    (void)pool; /* only the hwloc path needs it */
#ifdef HAVE_HWLOC
    if (pool->have_topology) {
        int ncores = hwloc_get_nbobjs_by_type(pool->topology, HWLOC_OBJ_CORE);
        if (ncores > 0) {
            hwloc_obj_t core =
                hwloc_get_obj_by_type(pool->topology, HWLOC_OBJ_CORE, (id + 1) % (unsigned)ncores);
            if (core && core->cpuset) {
                hwloc_set_cpubind(pool->topology, core->cpuset, HWLOC_CPUBIND_THREAD);
                return;
            }
        }
    }
#endif
    cpu_set_t allowed, mine;
    CPU_ZERO(&allowed);
    if (0 != sched_getaffinity(0, sizeof(allowed), &allowed)) {
        return;
    }
    int count = CPU_COUNT(&allowed);
    if (count <= 0) {
        return;
    }
    int wanted = (int)((id + 1) % (unsigned)count);
    for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &allowed) && seen++ == wanted) {
            CPU_ZERO(&mine);
            CPU_SET(cpu, &mine);
#ifdef HAVE_PTHREAD_SETAFFINITY_NP
            pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine);
#else
            sched_setaffinity(0, sizeof(mine), &mine);
#endif
            return;
        }
    }
}

static void *worker_main(void *arg)
{
    regpar_worker_t *self = arg;
    regpar_workers_t *pool = self->pool;
    if (pool->bind) {
        bind_worker(pool, self->id);
    }
    /* Generation 0 is the pool's state at creation: a job published before
     * this thread got the lock is then still seen as new. */
    unsigned long seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->shutdown && pool->generation == seen) {
            pthread_cond_wait(&pool->wake, &pool->lock);
        }
        if (pool->shutdown) {
            break;
        }
        seen = pool->generation;
        if (self->id >= pool->participants) {
            continue;
        }
        regpar_job_t *job = pool->job;
        pthread_mutex_unlock(&pool->lock);
        run_tasks(job);
        pthread_mutex_lock(&pool->lock);
        if (0 == --pool->pending) {
            pthread_cond_signal(&pool->done);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void stop_workers(regpar_workers_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->shutdown = true;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i < pool->nstarted; i++) {
        pthread_join(pool->threads[i], NULL);
    }
    pool->nstarted = 0;
}

int regpar_workers_create(unsigned nthreads, bool bind, regpar_workers_t **workers, char *err,
                          size_t errlen)
{
    *workers = NULL;
    if (nthreads < 1 || nthreads > REGPAR_WORKERS_MAX) {
        snprintf(err, errlen, "thread count %u is outside 1..%d", nthreads, REGPAR_WORKERS_MAX);
        return -1;
    }
    regpar_workers_t *pool = calloc(1, sizeof(*pool));
    if (!pool) {
        snprintf(err, errlen, "out of memory for the thread pool");
        return -1;
    }
    pool->nthreads = nthreads;
    pool->bind = bind;
    pool->owner = getpid();
    pool->threads = calloc(nthreads, sizeof(*pool->threads));
    pool->workers = calloc(nthreads, sizeof(*pool->workers));
    if (!pool->threads || !pool->workers) {
        free(pool->threads);
        free(pool->workers);
        free(pool);
        snprintf(err, errlen, "out of memory for the thread pool");
        return -1;
    }
    pthread_mutex_init(&pool->busy, NULL);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
#ifdef HAVE_HWLOC
    if (bind && 0 == hwloc_topology_init(&pool->topology)) {
        if (0 == hwloc_topology_load(pool->topology)) {
            pool->have_topology = true;
        } else {
            hwloc_topology_destroy(pool->topology);
        }
    }
#endif
    for (unsigned i = 0; i + 1 < nthreads; i++) {
        pool->workers[i].pool = pool;
        pool->workers[i].id = i;
        int rc = pthread_create(&pool->threads[i], NULL, worker_main, &pool->workers[i]);
        if (0 != rc) {
            snprintf(err, errlen, "cannot start registration thread %u of %u: %s", i + 2, nthreads,
                     strerror(rc));
            regpar_workers_destroy(pool);
            return -1;
        }
        pool->nstarted++;
    }
    *workers = pool;
    return 0;
}

void regpar_workers_destroy(regpar_workers_t *workers)
{
    if (!workers) {
        return;
    }
    stop_workers(workers);
#ifdef HAVE_HWLOC
    if (workers->have_topology) {
        hwloc_topology_destroy(workers->topology);
    }
#endif
    pthread_cond_destroy(&workers->done);
    pthread_cond_destroy(&workers->wake);
    pthread_mutex_destroy(&workers->lock);
    pthread_mutex_destroy(&workers->busy);
    free(workers->threads);
    free(workers->workers);
    free(workers);
}

unsigned regpar_workers_size(const regpar_workers_t *workers)
{
    return workers ? workers->nthreads : 1;
}

unsigned regpar_workers_run(regpar_workers_t *workers, unsigned nthreads, regpar_task_fn fn,
                            void *arg, size_t ntasks, int *status, bool stop_on_error)
{
    regpar_job_t job = {
        .fn = fn, .arg = arg, .ntasks = ntasks, .status = status, .stop_on_error = stop_on_error};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, false);

    size_t want = nthreads;
    if (want > regpar_workers_size(workers)) {
        want = regpar_workers_size(workers);
    }
    if (want > ntasks) {
        want = ntasks;
    }
    if (want <= 1 || workers->owner != getpid() || 0 != pthread_mutex_trylock(&workers->busy)) {
        run_tasks(&job);
        return 1;
    }

    pthread_mutex_lock(&workers->lock);
    workers->job = &job;
    workers->participants = (unsigned)want - 1;
    workers->pending = (unsigned)want - 1;
    workers->generation++;
    pthread_cond_broadcast(&workers->wake);
    pthread_mutex_unlock(&workers->lock);

    run_tasks(&job);

    pthread_mutex_lock(&workers->lock);
    while (workers->pending > 0) {
        pthread_cond_wait(&workers->done, &workers->lock);
    }
    workers->job = NULL;
    workers->participants = 0;
    pthread_mutex_unlock(&workers->lock);
    pthread_mutex_unlock(&workers->busy);
    return (unsigned)want;
}
