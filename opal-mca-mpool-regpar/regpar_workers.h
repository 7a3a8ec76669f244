/*
 * regpar_workers: the small thread pool the registration engine runs its
 * chunk jobs on.  Created once per engine, so that every worker exists
 * before any of them faults memory: creating a thread takes the mm lock for
 * writing and would stall workers that are populating pages.
 *
 * A job is a function and a number of tasks (the caller's array of chunk
 * ranges, addressed by index).  The caller takes part in its own job, each
 * task runs exactly once on one thread, and every task reports its own
 * status.  One job runs at a time: a caller that finds the pool busy runs
 * its job alone instead of waiting or nesting parallelism (nested
 * parallel registration was measurably slower in Mooncake).
 */
#ifndef REGPAR_WORKERS_H
#define REGPAR_WORKERS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hard cap on the threads of one pool (caller included). */
#define REGPAR_WORKERS_MAX 64

/* Status of a task that never ran because an earlier one failed. */
#define REGPAR_TASK_SKIPPED (-1)

typedef struct regpar_workers regpar_workers_t;

/* Run task index of a job; returns 0 or a positive error code. */
typedef int (*regpar_task_fn)(void *arg, size_t index);

/*
 * A pool of nthreads threads counting the caller, so nthreads - 1 workers
 * are started (none for 1).  bind pins worker i to the (i+1)-th core the
 * process may run on (hwloc when available, else pthread affinity), leaving
 * the first to the caller.  Returns 0, or -1 with a message in err.
 */
int regpar_workers_create(unsigned nthreads, bool bind, regpar_workers_t **workers, char *err,
                          size_t errlen);

/* Wakes and joins every worker.  No job may be running. */
void regpar_workers_destroy(regpar_workers_t *workers);

/* Threads of the pool, caller included (1 for a NULL pool). */
unsigned regpar_workers_size(const regpar_workers_t *workers);

/*
 * Run fn(arg, i) for every i in [0, ntasks) on at most nthreads threads
 * (the caller included), writing each return value to status[i].  With
 * stop_on_error, tasks not yet started when one fails are not run and get
 * REGPAR_TASK_SKIPPED.  Returns the number of threads that took part: 1
 * when the pool is NULL, nthreads <= 1, there is one task, another job is
 * running or the caller is a forked child of the pool's creator.
 */
unsigned regpar_workers_run(regpar_workers_t *workers, unsigned nthreads, regpar_task_fn fn,
                            void *arg, size_t ntasks, int *status, bool stop_on_error);

/* Cores this process may run on (its affinity mask), at least 1. */
unsigned regpar_workers_online_cores(void);

#ifdef __cplusplus
}
#endif

#endif /* REGPAR_WORKERS_H */
